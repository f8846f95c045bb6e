// The census table for people; -o json|yaml prints the CensusReport itself.
import type {Painter} from '../ui/color.js'
import {renderTable, tableLayout} from '../ui/table.js'
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

const names = (pods: {name: string}[], max = 3) =>
  pods.length <= max
    ? pods.map((p) => p.name).join(', ')
    : `${pods
        .slice(0, max)
        .map((p) => p.name)
        .join(', ')}, +${pods.length - max}`

function podsCell(pods: CensusRow['pods']): string {
  const own = [
    pods.gateway > 0 ? `${pods.gateway} gateway` : '',
    pods.controlPlane > 0 ? `${pods.controlPlane} control-plane` : '',
  ].filter(Boolean)
  return `${pods.total} (${pods.sidecar}/${pods.ambient}/${pods.none}${own.length > 0 ? `, ${own.join(', ')}` : ''})`
}

/** The default view leaves the label column to -o wide (kubectl's habit), so the table fits 80 columns. */
export function renderCensus(report: CensusReport, painter: Painter): string {
  const {wide} = tableLayout()
  // WAVE only when a fleet plan exists (plan -A): the order to migrate the namespaces in.
  const waves = report.namespaces.some((r) => r.wave !== undefined)
  const rows = report.namespaces.map((r) => [
    ...(waves ? [r.wave === undefined ? '-' : String(r.wave)] : []),
    r.namespace,
    modeCell(r, painter),
    ...(wide ? [labelsCell(r)] : []),
    podsCell(r.pods),
    r.outsideMesh.length > 0 ? painter.paint('yellow', `${r.outsideMesh.length}: ${names(r.outsideMesh)}`) : '0',
    r.sidecarInAmbient.length > 0
      ? painter.paint('yellow', `${r.sidecarInAmbient.length}: ${names(r.sidecarInAmbient)}`)
      : '0',
    r.waypoints.map((w) => `${w.name}${w.ready ? '' : ' (not ready)'}`).join(', ') || '-',
    r.plans.map((p) => `${p.file} ${p.applied}/${p.steps} ${p.state}${p.next ? ` next: ${p.next}` : ''}`).join('; ') ||
      '-',
  ])
  const s = report.summary
  const footer = `${report.namespaces.length} namespace(s): ${s.sidecar} sidecar, ${s.ambient} ambient, ${s.both} both, ${s.none} none; ${s.conflicts} with IST0123, ${s.outsideMesh} pod(s) outside the mesh, ${s.sidecarInAmbient} sidecar pod(s) in ambient namespaces.`
  const head = [
    ...(waves ? ['WAVE'] : []),
    'NAMESPACE',
    'MODE',
    ...(wide ? ['LABELS'] : []),
    'PODS (S/A/N)',
    'OUTSIDE-MESH',
    'SIDECAR-IN-AMBIENT',
    'WAYPOINTS',
    'PLANS',
  ]
  return `${renderTable(head, rows, painter)}\n\n${footer}\n`
}
