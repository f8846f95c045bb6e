// Mermaid's own parser, headless: mermaid's `parse` and the diagram database it fills, with a jsdom window
// for DOMPurify (mermaid sanitizes labels with it and fails to load without a DOM). @mermaid-js/parser
// has no gantt grammar (its languages are info, packet, pie, architecture, gitGraph, radar, treemap…);
// gantt is still mermaid's jison parser, reached only through mermaid itself.
import {JSDOM} from 'jsdom'

export interface GanttTask {
  section: string
  task: string
  start: number
  end: number
}

let loaded: Promise<typeof import('mermaid').default> | undefined

function loadMermaid() {
  loaded ??= (async () => {
    const {window} = new JSDOM('')
    Object.assign(globalThis, {window, document: window.document})
    return (await import('mermaid')).default
  })()
  return loaded
}

/** Parse a gantt chart as Mermaid renders it; throws Mermaid's parse error. The tasks with their start and end. */
export async function parseGantt(text: string): Promise<GanttTask[]> {
  const mermaid = await loadMermaid()
  const parsed = await mermaid.parse(text)
  if (!parsed || parsed.diagramType !== 'gantt') throw new Error(`not a gantt chart: ${JSON.stringify(parsed)}`)
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(text)
  const db = diagram.db as {
    getTasks(): Array<{section: string; task: string; startTime: Date; endTime: Date}>
  }
  return db.getTasks().map((t) => ({
    section: t.section,
    task: t.task.trim(),
    start: t.startTime.valueOf(),
    end: t.endTime.valueOf(),
  }))
}
