// PeerAuthentication (DOMAIN §3.2, §7 E18, §8).
// ztunnel resolves the effective mTLS mode like istiod's ComposePeerAuthentication: mesh (root namespace,
// no selector, oldest wins) → namespace (no selector, oldest) → workload (oldest selector policy *outside* the
// root namespace); UNSET inherits. STRICT becomes a static "deny plaintext" policy; PERMISSIVE accepts both;
// DISABLE cannot turn mTLS off between ambient pods (HBONE) and the docs treat it as a hard blocker.
// portLevelMtls is honoured only for workload-selector policies outside the root namespace.
import {finding} from '../findings/finding.js'
import type {ClassifyContext} from '../context.js'
import type {Finding, KubeObject, ObjectRef, WorkloadItem} from '../model.js'
import type {MtlsMode, PeerAuthenticationSpec} from '../istio-types.js'
import {formatRef, objectKey} from '../refs.js'
import {type Classified, type KindClassifier, classifiedId, item, reason, workloadNames} from './results.js'
import {allServices, hasLabels, labelsSubset, noPodSelected, selectorCoverage, servicesCovering} from './selection.js'
import {compareAge, itemRef, kindKey, memo, namespaceOf, objectsOfKind} from './objects.js'
import {isRecord} from '../json.js'
import {SECURITY, podTemplateOrPod} from '../vocab.js'

type Level = 'mesh' | 'namespace' | 'workload' | 'root-selector'

function modeOf(obj: KubeObject): MtlsMode {
  const raw = String((obj.spec as PeerAuthenticationSpec | undefined)?.mtls?.mode ?? 'UNSET').toUpperCase()
  return raw === 'STRICT' || raw === 'PERMISSIVE' || raw === 'DISABLE' ? raw : 'UNSET'
}

function selectorOf(obj: KubeObject): Record<string, string> | undefined {
  const sel = (obj.spec as PeerAuthenticationSpec | undefined)?.selector?.matchLabels
  return hasLabels(sel) ? sel : undefined
}

function levelOf(obj: KubeObject, ctx: ClassifyContext): Level {
  const root = namespaceOf(obj, ctx) === ctx.rootNamespace
  if (selectorOf(obj)) return root ? 'root-selector' : 'workload'
  return root ? 'mesh' : 'namespace'
}

interface Resolution {
  /** The PeerAuthentication that decides the mode for the workload, or undefined (default PERMISSIVE). */
  decidedBy?: KubeObject
  mode: Exclude<MtlsMode, 'UNSET'>
  /** The workload-level policy in force (whose portLevelMtls applies). */
  workloadPolicy?: KubeObject
}

/** The PeerAuthentications that take part in resolving modes for the migrated namespace, oldest first per level. */
function candidates(ctx: ClassifyContext): {mesh?: KubeObject; namespace?: KubeObject; workload: KubeObject[]} {
  return memo(ctx, 'pa:candidates', () => computeCandidates(ctx))
}

function computeCandidates(ctx: ClassifyContext): {mesh?: KubeObject; namespace?: KubeObject; workload: KubeObject[]} {
  const seen = new Set<string>()
  const pas = objectsOfKind(ctx, `${SECURITY}/PeerAuthentication`)
    .filter((o) => {
      const k = objectKey({...o, metadata: {...o.metadata, namespace: namespaceOf(o, ctx)}})
      if (seen.has(k)) return false
      seen.add(k)
      return true
    })
    .sort(compareAge)
  return {
    mesh: pas.find((o) => levelOf(o, ctx) === 'mesh'),
    namespace:
      ctx.namespace === ctx.rootNamespace
        ? undefined
        : pas.find((o) => namespaceOf(o, ctx) === ctx.namespace && levelOf(o, ctx) === 'namespace'),
    workload: pas.filter((o) => namespaceOf(o, ctx) === ctx.namespace && levelOf(o, ctx) === 'workload'),
  }
}

function resolve(ctx: ClassifyContext, w: WorkloadItem | undefined): Resolution {
  return memo(ctx, `pa:resolve:${w ? `${w.ref.kind}/${w.ref.name}` : ''}`, () => computeResolution(ctx, w))
}

function computeResolution(ctx: ClassifyContext, w: WorkloadItem | undefined): Resolution {
  const c = candidates(ctx)
  const workloadPolicy = w ? c.workload.find((o) => labelsSubset(selectorOf(o), w.podLabels)) : undefined
  for (const o of [workloadPolicy, c.namespace, c.mesh]) {
    if (!o) continue
    const mode = modeOf(o)
    if (mode !== 'UNSET') return {decidedBy: o, mode, ...(workloadPolicy ? {workloadPolicy} : {})}
  }
  return {mode: 'PERMISSIVE', ...(workloadPolicy ? {workloadPolicy} : {})}
}

/** Workloads (or, without workloads, the namespace as a whole) whose effective mode this policy decides. */
function decidedWorkloads(obj: KubeObject, ctx: ClassifyContext): {workloads: WorkloadItem[]; namespaceWide: boolean} {
  const key = objectKey({...obj, metadata: {...obj.metadata, namespace: namespaceOf(obj, ctx)}})
  const same = (o: KubeObject | undefined) =>
    o !== undefined && objectKey({...o, metadata: {...o.metadata, namespace: namespaceOf(o, ctx)}}) === key
  const workloads = ctx.workloads.filter((w) => same(resolve(ctx, w).decidedBy))
  const namespaceWide = ctx.workloads.length === 0 && same(resolve(ctx, undefined).decidedBy)
  return {workloads, namespaceWide}
}

function inForce(obj: KubeObject, ctx: ClassifyContext): WorkloadItem[] {
  const key = objectKey({...obj, metadata: {...obj.metadata, namespace: namespaceOf(obj, ctx)}})
  return ctx.workloads.filter((w) => {
    const wp = resolve(ctx, w).workloadPolicy
    return wp !== undefined && objectKey({...wp, metadata: {...wp.metadata, namespace: namespaceOf(wp, ctx)}}) === key
  })
}

/**
 * Ports a STRICT workload keeps open to plaintext: the PERMISSIVE entries of the workload-selector policy in force
 * for it (outside the root namespace). ztunnel honours them: istiod converts them into per-port exceptions
 * (notDestinationPorts) of the workload's STRICT DENY, merged with a STRICT parent since 1.25
 * (istio/istio pilot/pkg/serviceregistry/ambient/policies.go, #54073; DOMAIN §3.2, E18).
 */
function plaintextPorts(
  ctx: ClassifyContext,
  workloads: WorkloadItem[],
): {workload: WorkloadItem; ports: string[]; policy: string}[] {
  const out: {workload: WorkloadItem; ports: string[]; policy: string}[] = []
  for (const w of workloads) {
    const wp = resolve(ctx, w).workloadPolicy
    const portLevel =
      wp && isRecord(wp.spec?.portLevelMtls)
        ? Object.entries(wp.spec.portLevelMtls as Record<string, {mode?: string}>)
        : []
    const ports = portLevel
      .filter(([, setting]) => String(setting?.mode ?? '').toUpperCase() === 'PERMISSIVE')
      .map(([port]) => port)
    if (ports.length > 0) out.push({workload: w, ports, policy: wp!.metadata.name})
  }
  return out
}

/** Pod template annotations of a workload, read from its controller in the snapshot. */
function templateAnnotations(ctx: ClassifyContext, w: WorkloadItem): Record<string, string> {
  const obj = objectsOfKind(ctx, kindKey(w.ref)).find(
    (o) => o.metadata.name === w.ref.name && namespaceOf(o, ctx) === ctx.namespace,
  )
  if (!obj) return {}
  return podTemplateOrPod(obj)?.metadata?.annotations ?? {}
}

export function classifyPeerAuthentication(obj: KubeObject, ctx: ClassifyContext): Classified {
  const ref = itemRef(obj, ctx)
  const spec: PeerAuthenticationSpec = isRecord(obj.spec) ? obj.spec : {}
  const level = levelOf(obj, ctx)
  const mode = modeOf(obj)
  const reasons: string[] = []
  const findings: Finding[] = []
  const name = formatRef(ref)
  const portLevel = isRecord(spec.portLevelMtls) ? Object.entries(spec.portLevelMtls) : []
  const scope = level === 'mesh' ? 'mesh' : level === 'namespace' ? 'namespace' : 'workload'

  if (level === 'root-selector') return rootSelectorPolicy(obj, ctx, ref, portLevel)

  const cov = selectorCoverage(ctx, selectorOf(obj))
  const services = level === 'workload' ? cov.services : allServices(ctx)
  const noPod =
    level === 'workload'
      ? noPodSelected(ctx, cov, 'spec.selector', ref, reasons, {scope, services}, findings)
      : undefined
  if (noPod) return noPod
  const scopeText =
    level === 'workload'
      ? `workload scope (${workloadNames(cov.workloads)})`
      : level === 'namespace'
        ? `namespace scope (${ref.namespace})`
        : 'mesh scope (root namespace, no selector)'

  const decided = decidedWorkloads(obj, ctx)
  const effective = decided.workloads.length > 0 || decided.namespaceWide
  const decidedText = decided.namespaceWide ? `namespace ${ctx.namespace}` : workloadNames(decided.workloads)

  const port = portLevelReasons(obj, ctx, level, portLevel)
  reasons.push(...port.reasons)
  const portDisable = port.disable
  reasons.push(modeReason(spec, mode, effective, scopeText, decidedText, ctx))

  const blocked = (mode === 'DISABLE' && effective) || portDisable.length > 0
  if (blocked) {
    findings.push(
      finding(
        'PeerAuthenticationDisable',
        ref,
        mode === 'DISABLE' && effective
          ? {variant: 'mode', name, workloads: decidedText}
          : {variant: 'ports', name, ports: portDisable},
        {id: classifiedId('E18', ref, 'disable')},
      ),
    )
    return {item: item(ref, 'blocker', 'blocker', reasons, {scope, services}), findings}
  }

  if (mode === 'STRICT' && effective)
    findings.push(strictFinding(obj, ctx, decided.namespaceWide ? ctx.workloads : decided.workloads, decidedText))

  const verdict = mode === 'DISABLE' ? 'inert' : 'L4'
  return {
    item: item(ref, verdict, 'keep', reasons, {
      scope,
      services: level === 'workload' ? servicesCovering(ctx, cov.workloads) : services,
    }),
    findings,
  }
}

/** The entries of spec.portLevelMtls: [port, setting]. */
type PortLevelEntries = Array<[string, {mode?: MtlsMode} | undefined]>

/** A selector policy in the root namespace: ztunnel does not use it (nor its portLevelMtls, E18). */
function rootSelectorPolicy(
  obj: KubeObject,
  ctx: ClassifyContext,
  ref: ObjectRef,
  portLevel: PortLevelEntries,
): Classified {
  const name = formatRef(ref)
  const scope = 'workload'
  const reasons: string[] = []
  const findings: Finding[] = []
  const cov = selectorCoverage(ctx, selectorOf(obj))
  reasons.push(
    reason(
      'spec.selector',
      `selector policy in the root namespace (matches ${workloadNames(cov.workloads)}): ztunnel resolves workload-level PeerAuthentication only from selector policies outside the root namespace, so it is not used`,
    ),
  )
  if (portLevel.length > 0) {
    reasons.push(
      reason(
        'spec.portLevelMtls',
        'ignored by ztunnel: portLevelMtls is honoured only for workload-selector policies outside the root namespace (E18)',
      ),
    )
    findings.push(
      finding(
        'RootPortLevelMtlsIgnored',
        ref,
        {name, namespace: ctx.namespace, workloads: workloadNames(cov.workloads)},
        {id: classifiedId('E18', ref, 'root-port-level'), severity: 'warning'},
      ),
    )
  }
  return {item: item(ref, 'inert', 'keep', reasons, {scope, services: cov.services}), findings}
}

/** portLevelMtls: what ztunnel honours, and the ports it disables mTLS on (only when the policy is in force). */
function portLevelReasons(
  obj: KubeObject,
  ctx: ClassifyContext,
  level: ReturnType<typeof levelOf>,
  portLevel: PortLevelEntries,
): {reasons: string[]; disable: string[]} {
  const reasons: string[] = []
  let portDisable: string[] = []
  if (portLevel.length === 0) return {reasons, disable: portDisable}
  if (level !== 'workload') {
    reasons.push(
      reason('spec.portLevelMtls', 'ignored: portLevelMtls needs a workload selector (outside the root namespace)'),
    )
  } else {
    const used = inForce(obj, ctx).length > 0
    for (const [port, setting] of portLevel) {
      const pm = String(setting?.mode ?? 'UNSET').toUpperCase()
      const path = `spec.portLevelMtls[${port}].mode`
      if (pm === 'DISABLE') {
        portDisable.push(port)
        reasons.push(
          reason(
            path,
            'DISABLE: ztunnel treats it as "not STRICT" (plaintext accepted on this port) but cannot turn mTLS off between ambient pods (HBONE); the docs list DISABLE as a migration blocker',
          ),
        )
      } else {
        reasons.push(
          reason(
            path,
            `${pm}: honoured by ztunnel (workload-selector policy outside the root namespace; merged with the STRICT parent since 1.25)`,
          ),
        )
      }
    }
    if (!used) portDisable = []
  }
  return {reasons, disable: portDisable}
}

/** The reason for the policy-wide mode, as ztunnel enforces it. */
function modeReason(
  spec: PeerAuthenticationSpec,
  mode: MtlsMode,
  effective: boolean,
  scopeText: string,
  decidedText: string,
  ctx: ClassifyContext,
): string {
  if (mode !== 'UNSET' && !effective) {
    return reason(
      'spec.mtls.mode',
      `${mode}, but overridden for every workload of ${ctx.namespace} by a more specific (or older) PeerAuthentication: not in force here`,
    )
  }
  const why: Record<MtlsMode, string> = {
    STRICT: `STRICT (${scopeText}): ztunnel rejects plaintext from outside the mesh; sidecars and ingress gateways reach ambient pods over HBONE and pass; kubelet probes are exempt`,
    PERMISSIVE: `PERMISSIVE (${scopeText}): ztunnel accepts HBONE and plaintext (plaintext has no identity, so identity-based ALLOWs still reject it)`,
    UNSET: `UNSET (${scopeText}): inherits the parent mode; ztunnel resolves it the same way`,
    DISABLE: `DISABLE (${scopeText}, in force for ${decidedText}): ambient pods always talk HBONE/mTLS, so DISABLE cannot turn mTLS off; ztunnel only treats it as "not STRICT" and the docs list it as a hard migration blocker`,
  }
  return reason(spec.mtls?.mode ? 'spec.mtls.mode' : 'spec.mtls', why[mode])
}

/** E18: who a STRICT policy shuts out once ztunnel enforces it, minus the port exceptions ztunnel honours (issue 10 point 5). */
function strictFinding(obj: KubeObject, ctx: ClassifyContext, workloads: WorkloadItem[], decidedText: string): Finding {
  const ref = itemRef(obj, ctx)
  const name = formatRef(ref)
  const scraped = workloads.filter((w) => templateAnnotations(ctx, w)['prometheus.io/scrape'] === 'true')
  const open = plaintextPorts(ctx, workloads)
  const openText = open
    .map((o) => `${o.workload.ref.name} port(s) ${o.ports.join(', ')} (PeerAuthentication ${o.policy})`)
    .join('; ')
  const everyWorkloadOpen = open.length === workloads.length && workloads.length > 0
  const at = {id: classifiedId('E18', ref, 'strict')}
  const base = {policy: name, workloads: decidedText}
  const scrapedNames = workloadNames(scraped)
  if (open.length === 0)
    return finding(
      'StrictRejectsOutOfMeshCallers',
      ref,
      scraped.length > 0
        ? {...base, variant: 'noExceptionsScraped', scraped: scrapedNames}
        : {...base, variant: 'noExceptions'},
      at,
    )
  const excepted = {...base, exceptions: openText}
  if (everyWorkloadOpen)
    return finding(
      'StrictRejectsOutOfMeshCallers',
      ref,
      scraped.length > 0
        ? {...excepted, variant: 'everyWorkloadExceptedScraped', scraped: scrapedNames}
        : {...excepted, variant: 'everyWorkloadExcepted'},
      at,
    )
  const partial = {
    ...excepted,
    workloadsWithoutExceptions: workloadNames(workloads.filter((w) => !open.some((o) => o.workload === w))),
  }
  return finding(
    'StrictRejectsOutOfMeshCallers',
    ref,
    scraped.length > 0
      ? {...partial, variant: 'someWorkloadsExceptedScraped', scraped: scrapedNames}
      : {...partial, variant: 'someWorkloadsExcepted'},
    at,
  )
}

/** Root-namespace PeerAuthentications: the mesh-wide one, and selector ones that match pods here (reported as ignored). */
function relevantElsewhere(obj: KubeObject, ctx: ClassifyContext): boolean {
  if (namespaceOf(obj, ctx) !== ctx.rootNamespace) return false
  const sel = selectorOf(obj)
  return !sel || selectorCoverage(ctx, sel).workloads.length > 0
}

export const peerAuthenticationClassifier: KindClassifier = {
  kinds: [`${SECURITY}/PeerAuthentication`],
  relevantElsewhere,
  classify: classifyPeerAuthentication,
}
