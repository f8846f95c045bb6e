// The fleet's waves handed to a GitOps engine (issue 22 §4). Per namespace a Kustomize overlay: the changes
// `show -o patches` gives (gitops.ts), each annotated argocd.argoproj.io/sync-wave with its step's position, and the
// restarts apply would do as a kubectl.kubernetes.io/restartedAt pod-template annotation (what `kubectl rollout
// restart` writes). For Argo CD one ApplicationSet with a RollingSync step per wave, selecting the Applications by
// their mesh-migrate.io/wave label; for Flux one Kustomization per namespace whose dependsOn names the namespaces of
// the wave before, with health checks on the waypoint Gateway and the restarted workloads. Pure.
import {stringify} from 'yaml'

import type {FleetPlan} from './fleet.js'
import {type ManifestChange, manifestChanges} from './gitops.js'
import type {KubeObject, ObjectRef} from '../planner/model.js'
import type {MigrationPlan} from '../planner/plan-types.js'
import {specDigest} from './planfile.js'
import {isRolloutRestartable} from '../planner/vocab.js'

export const WAVE_LABEL = 'mesh-migrate.io/wave'
export const SYNC_WAVE_ANNOTATION = 'argocd.argoproj.io/sync-wave'
export const RESTARTED_AT_ANNOTATION = 'kubectl.kubernetes.io/restartedAt'

export interface GitOpsOptions {
  /** The directory (in the repository) holding one overlay directory per namespace. */
  dir: string
  /** Argo CD: the repository the Applications sync from. */
  repoURL?: string
  /** Flux: the GitRepository the Kustomizations sync from. */
  sourceRef?: string
}

export interface OverlayFile {
  path: string
  text: string
}

const appName = (ns: string) => `mesh-migrate-${ns}`

/** One file of the overlay: the change, annotated with the position of its step (Argo CD applies lower waves first). */
function annotated(document: Record<string, unknown>, wave: number): Record<string, unknown> {
  const metadata = (document.metadata ?? {}) as {annotations?: Record<string, string>}
  return {
    ...document,
    metadata: {...metadata, annotations: {...metadata.annotations, [SYNC_WAVE_ANNOTATION]: String(wave)}},
  }
}

/** The restart of a workload as a manifest change: a pod-template annotation, as `kubectl rollout restart` writes. */
function restartPatch(ref: ObjectRef, stamp: string): Record<string, unknown> {
  return {
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata: {name: ref.name, ...(ref.namespace ? {namespace: ref.namespace} : {})},
    spec: {template: {metadata: {annotations: {[RESTARTED_AT_ANNOTATION]: stamp}}}},
  }
}

const fileName = (n: number, step: string, change: {kind: string; ref: ObjectRef}) =>
  `${String(n).padStart(3, '0')}-${step}-${change.kind}-${change.ref.kind.toLowerCase()}-${change.ref.name}.yaml`

/** The namespace's overlay: kustomization.yaml and one file per change, in step order. */
export function namespaceOverlay(plan: MigrationPlan, options: GitOpsOptions): OverlayFile[] {
  const ns = plan.metadata.namespace
  const dir = `${options.dir}/${ns}`
  // One value per plan: the restart happens once, when the overlay is first synced (a digest, not a clock).
  const stamp = `mesh-migrate ${specDigest(plan).slice('sha256:'.length, 'sha256:'.length + 12)}`
  const files: OverlayFile[] = []
  const resources: string[] = []
  const patches: string[] = []
  let n = 0
  for (const step of manifestChanges(plan)) {
    const wave = plan.spec.steps.findIndex((s) => s.id === step.id) + 1
    const restarts = step.restarts.filter((r) => isRolloutRestartable(r.kind))
    const changes: {kind: ManifestChange['kind'] | 'restart'; ref: ObjectRef; document: Record<string, unknown>}[] = [
      ...step.changes,
      ...restarts.map((ref) => ({kind: 'restart' as const, ref, document: restartPatch(ref, stamp)})),
    ]
    for (const change of changes) {
      const name = fileName(++n, step.id, change)
      ;(change.kind === 'add' ? resources : patches).push(name)
      files.push({path: `${dir}/${name}`, text: stringify(annotated(change.document, wave), {lineWidth: 0})})
    }
  }
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources,
    patches: patches.map((path) => ({path})),
  }
  const header = [
    `# mesh-migrate: the migration of namespace ${ns} (plan ${plan.metadata.name}) as a Kustomize overlay, in step order`,
    `# (${SYNC_WAVE_ANNOTATION}). Add the namespace's own manifests (the objects the patches change) to resources.`,
  ]
  files.unshift({path: `${dir}/kustomization.yaml`, text: `${header.join('\n')}\n${stringify(kustomization)}`})
  return files
}

/** Argo CD: one Application per namespace with a plan, labelled with its wave, synced wave by wave (RollingSync). */
export function argoApplicationSet(fleet: FleetPlan, namespaces: string[], options: GitOpsOptions): KubeObject {
  const members = fleet.spec.namespaces.filter((n) => namespaces.includes(n.name))
  const waves = [...new Set(members.map((n) => n.wave))].sort((a, b) => a - b)
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: {name: 'mesh-migrate-fleet', namespace: 'argocd'},
    spec: {
      goTemplate: true,
      goTemplateOptions: ['missingkey=error'],
      generators: [
        {
          list: {
            elements: members.map((n) => ({namespace: n.name, wave: String(n.wave), path: `${options.dir}/${n.name}`})),
          },
        },
      ],
      strategy: {
        type: 'RollingSync',
        rollingSync: {
          steps: waves.map((w) => ({matchExpressions: [{key: WAVE_LABEL, operator: 'In', values: [String(w)]}]})),
        },
      },
      template: {
        metadata: {name: 'mesh-migrate-{{.namespace}}', labels: {[WAVE_LABEL]: '{{.wave}}'}},
        spec: {
          project: 'default',
          source: {repoURL: options.repoURL ?? '', targetRevision: 'HEAD', path: '{{.path}}'},
          destination: {server: 'https://kubernetes.default.svc', namespace: '{{.namespace}}'},
        },
      },
    },
  }
}

/** What Flux waits for before the namespaces of the next wave: the waypoint Gateway and the restarted workloads. */
function healthChecks(plan: MigrationPlan): {apiVersion: string; kind: string; name: string; namespace: string}[] {
  const out = new Map<string, {apiVersion: string; kind: string; name: string; namespace: string}>()
  for (const step of plan.spec.steps) {
    for (const op of step.operations) {
      const ref =
        op.op === 'apply' && op.object.kind === 'Gateway'
          ? {apiVersion: op.object.apiVersion, kind: 'Gateway', name: op.object.metadata.name}
          : op.op === 'restart' && isRolloutRestartable(op.ref.kind)
            ? op.ref
            : undefined
      if (!ref) continue
      const check = {apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, namespace: plan.metadata.namespace}
      out.set(`${check.kind}/${check.name}`, check)
    }
  }
  return [...out.values()]
}

/** Flux: one Kustomization per namespace; dependsOn the namespaces of the wave before (each needs them Ready). */
export function fluxKustomizations(fleet: FleetPlan, plans: MigrationPlan[], options: GitOpsOptions): KubeObject[] {
  const waveOf = new Map(fleet.spec.namespaces.map((n) => [n.name, n.wave]))
  const [kind, name] = (options.sourceRef ?? 'GitRepository/flux-system').split('/')
  return plans.map((plan) => {
    const ns = plan.metadata.namespace
    const wave = waveOf.get(ns) ?? 1
    const before = plans
      .map((p) => p.metadata.namespace)
      .filter((other) => waveOf.get(other) === wave - 1)
      .sort()
    return {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: {name: appName(ns), namespace: 'flux-system', labels: {[WAVE_LABEL]: String(wave)}},
      spec: {
        interval: '10m',
        path: `./${options.dir}/${ns}`,
        prune: false,
        sourceRef: {kind: kind!, name: name!},
        timeout: '10m',
        ...(before.length > 0 ? {dependsOn: before.map((d) => ({name: appName(d)}))} : {}),
        healthChecks: healthChecks(plan),
      },
    }
  })
}

export function yamlStream(objects: KubeObject[]): string {
  return objects.map((o) => `---\n${stringify(o, {lineWidth: 0})}`).join('')
}
