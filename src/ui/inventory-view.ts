// Human rendering of an inventory (the `inventory` command's table output).
import type {Finding, Inventory, NamespaceState} from '../planner/model.js'
import type {Painter} from './color.js'
import {renderTable} from './table.js'

export function describeNamespaceState(s: NamespaceState): string {
  const labels = [
    ...s.sidecarLabels.map((l) => `${l.key}=${l.value}`),
    ...(s.dataplaneMode ? [`istio.io/dataplane-mode=${s.dataplaneMode}`] : []),
    ...(s.useWaypoint ? [`istio.io/use-waypoint=${s.useWaypoint}`] : []),
  ]
  return `${s.mode}${labels.length > 0 ? ` (${labels.join(', ')})` : ' (no mesh labels)'}`
}

const VERDICT_STYLE = {L4: 'green', L7: 'yellow', inert: 'gray', unaffected: 'gray', blocker: 'red'} as const
const SEVERITY_STYLE = {blocker: 'red', error: 'red', warning: 'yellow', info: 'gray'} as const

export function renderFindings(findings: Finding[], painter: Painter): string {
  if (findings.length === 0) return ''
  return renderTable(
    ['SEVERITY', 'ID', 'MESSAGE'],
    findings.map((f) => [
      painter.paint(SEVERITY_STYLE[f.severity], f.severity),
      f.id,
      f.fix ? `${f.message} → ${f.fix}` : f.message,
    ]),
    painter,
  )
}

export function renderInventory(inv: Inventory, painter: Painter): string {
  const out: string[] = []
  out.push(`Namespace ${painter.paint('bold', inv.namespace)}: ${describeNamespaceState(inv.namespaceState)} → ambient`)
  out.push(
    `Waypoint required: ${inv.waypointRequired ? painter.paint('yellow', 'yes') : 'no'}   Root namespace: ${inv.rootNamespace}`,
  )
  out.push('')
  if (inv.objects.length > 0) {
    out.push(painter.paint('bold', 'OBJECTS'))
    out.push(
      renderTable(
        ['KIND', 'NAMESPACE', 'NAME', 'VERDICT', 'ACTION', 'WHY'],
        inv.objects.map((o) => [
          o.ref.kind,
          o.ref.namespace ?? '',
          o.ref.name,
          painter.paint(VERDICT_STYLE[o.verdict], o.verdict),
          o.action,
          o.reasons.length === 0
            ? ''
            : o.reasons.length === 1
              ? o.reasons[0]!
              : `${o.reasons[0]} (+${o.reasons.length - 1} more)`,
        ]),
        painter,
      ),
    )
    out.push('')
  } else {
    out.push('No Istio or Gateway API objects affect this namespace.', '')
  }
  if (inv.workloads.length > 0) {
    out.push(painter.paint('bold', 'WORKLOADS'))
    out.push(
      renderTable(
        ['KIND', 'NAME', 'PROXY', 'PODS', 'NOTES'],
        inv.workloads.map((w) => [
          w.ref.kind,
          w.ref.name,
          `${w.proxy}${w.predicted ? ' (predicted)' : ''}`,
          w.pods ? `${w.pods.total} (${w.pods.sidecar} sidecar, ${w.pods.ambient} ambient)` : '-',
          [...w.traits, ...w.lostAnnotations.map((a) => `inert: ${a.key}`)].join(', '),
        ]),
        painter,
      ),
    )
    out.push('')
  }
  if (inv.findings.length > 0) {
    out.push(painter.paint('bold', 'FINDINGS'))
    out.push(renderFindings(inv.findings, painter))
  }
  return out.join('\n')
}
