// The census table for people; -o json|yaml prints the CensusReport itself.
import type {Painter} from '../ui/color.js'
import {renderTable} from '../ui/table.js'
import type {CensusReport, CensusRow} from './census.js'

function modeCell(row: CensusRow, painter: Painter): string {
  const text = row.conflict ? `${row.mode} (IST0123)` : row.mode
  if (row.mode === 'both') return painter.paint('red', text)
  if (row.mode === 'ambient') return painter.paint('green', text)
  if (row.mode === 'sidecar') return painter.paint('cyan', text)
  return row.conflict ? painter.paint('yellow', text) : text
}

function labelsCell(row: CensusRow): string {
  const parts: string[] = []
  if (row.sidecarInjection) parts.push(row.sidecarInjection)
  if (row.dataplaneMode !== undefined) parts.push(`istio.io/dataplane-mode=${row.dataplaneMode}`)
  if (row.useWaypoint !== undefined) parts.push(`istio.io/use-waypoint=${row.useWaypoint}`)
  return parts.join(' ')
}

const names = (pods: {name: string}[], max = 3) => (pods.length <= max ? pods.map((p) => p.name).join(',') : `${pods.slice(0, max).map((p) => p.name).join(',')},+${pods.length - max}`)

export function renderCensus(report: CensusReport, painter: Painter): string {
  // WAVE only when a fleet plan exists (plan -A): the order to migrate the namespaces in.
  const waves = report.namespaces.some((r) => r.wave !== undefined)
  const rows = report.namespaces.map((r) => [
    ...(waves ? [r.wave === undefined ? '-' : String(r.wave)] : []),
    r.namespace,
    modeCell(r, painter),
    labelsCell(r),
    `${r.pods.total} (${r.pods.sidecar}/${r.pods.ambient}/${r.pods.none}${r.pods.gateway > 0 ? `, ${r.pods.gateway} gateway` : ''})`,
    r.outsideMesh.length > 0 ? painter.paint('yellow', `${r.outsideMesh.length}: ${names(r.outsideMesh)}`) : '0',
    r.sidecarInAmbient.length > 0 ? painter.paint('yellow', `${r.sidecarInAmbient.length}: ${names(r.sidecarInAmbient)}`) : '0',
    r.waypoints.map((w) => `${w.name}${w.ready ? '' : ' (not ready)'}`).join(',') || '-',
    r.plans.map((p) => `${p.file} ${p.applied}/${p.steps} ${p.state}${p.next ? ` next:${p.next}` : ''}`).join('; ') || '-',
  ])
  const s = report.summary
  const footer = `${report.namespaces.length} namespace(s): ${s.sidecar} sidecar, ${s.ambient} ambient, ${s.both} both, ${s.none} none; ${s.conflicts} with IST0123, ${s.outsideMesh} pod(s) outside the mesh, ${s.sidecarInAmbient} sidecar pod(s) in ambient namespaces.`
  return `${renderTable([...(waves ? ['WAVE'] : []), 'NAMESPACE', 'MODE', 'LABELS', 'PODS (SIDECAR/AMBIENT/NONE)', 'OUTSIDE-MESH', 'SIDECAR-IN-AMBIENT', 'WAYPOINTS', 'PLANS'], rows, painter)}\n\n${footer}\n`
}
