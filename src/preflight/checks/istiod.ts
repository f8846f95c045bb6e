// Preflight check module (SPEC §6 step 1, DOMAIN §4.4). Which istiod serves the namespace, and reading its containers and environment.
import {renderFinding} from '../../planner/findings/finding.js'
import type {KubeObject} from '../../planner/model.js'
import {analyzeInjectionWebhooks} from '../../planner/namespace.js'
import {REVISION_LABEL} from '../../planner/vocab.js'
import {type CheckContext, type Diag, soft} from './context.js'

export interface IstioVersion {
  major: number
  minor: number
  patch?: number
  /** As written in the image tag. */
  text: string
}

/** "docker.io/istio/pilot:1.28.1-distroless" → 1.28.1; digests and non-version tags give undefined. */
export function istioVersionFromImage(image: string | undefined): IstioVersion | undefined {
  if (!image || image.includes('@')) return undefined
  const tag = image.slice(image.lastIndexOf(':') + 1)
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(tag)
  if (!match || image.lastIndexOf(':') < image.lastIndexOf('/')) return undefined
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    ...(match[3] !== undefined ? {patch: Number(match[3])} : {}),
    text: tag,
  }
}

export interface IstiodChoice {
  /** istiod Deployments found in the root namespace. */
  candidates: KubeObject[]
  /** The revision the namespace is served by ("default" unless istio.io/rev says otherwise). */
  revision: string
  /** How the revision was derived, for messages. */
  why: string
  istiod?: KubeObject
}

const istiodRevision = (d: KubeObject): string => d.metadata.labels?.[REVISION_LABEL] || 'default'

function isIstiod(d: KubeObject): boolean {
  return d.metadata.labels?.app === 'istiod' || d.metadata.name === 'istiod' || d.metadata.name.startsWith('istiod-')
}

/**
 * The istiod that serves the namespace: the one of its `istio.io/rev` (a revision tag resolved to its
 * revision through the injector webhooks' `istio.io/tag` labels), else the default revision. That
 * revision also owns the namespace's waypoints (DOMAIN §1.8).
 */
export function chooseIstiod(
  deployments: KubeObject[],
  namespaceLabels: Record<string, string>,
  tags: Record<string, string>,
): IstiodChoice {
  const candidates = deployments.filter(isIstiod)
  const nsRev = namespaceLabels[REVISION_LABEL]
  let revision = 'default'
  let why = 'the default revision'
  if (nsRev) {
    revision = tags[nsRev] ?? nsRev
    why = tags[nsRev] ? `istio.io/rev=${nsRev} (revision tag of ${revision})` : `istio.io/rev=${nsRev}`
  } else if (tags.default) {
    revision = tags.default
    why = `the "default" revision tag (revision ${revision})`
  }
  let istiod = candidates.find((d) => istiodRevision(d) === revision)
  if (!istiod && revision === 'default' && candidates.length === 1) istiod = candidates[0]
  return {candidates, revision, why, ...(istiod ? {istiod} : {})}
}

export interface Container {
  name?: string
  image?: string
  env?: {name?: string; value?: string; valueFrom?: unknown}[]
  envFrom?: {configMapRef?: {name?: string}}[]
}

export function mainContainer(obj: KubeObject, name: string): Container | undefined {
  const containers: Container[] = obj.spec?.template?.spec?.containers ?? []
  return containers.find((c) => c.name === name) ?? containers[0]
}

export async function servingIstiod(ctx: CheckContext): Promise<IstiodChoice> {
  const [deployments, ns, webhooks] = await Promise.all([
    ctx.reads.rootDeployments(),
    ctx.reads.namespaceObject(),
    soft(ctx.reads.webhooks()),
  ])
  const tags = analyzeInjectionWebhooks(webhooks ?? []).webhooks.tags
  return chooseIstiod(deployments, ns?.metadata.labels ?? {}, tags)
}

export function noIstiod(ctx: CheckContext, choice: IstiodChoice): Diag {
  const root = ctx.input.rootNamespace
  if (choice.candidates.length === 0) {
    return renderFinding('IstiodNotFound', {root}, 'error')
  }
  return renderFinding(
    'IstiodRevisionNotFound',
    {
      namespace: ctx.input.namespace,
      why: choice.why,
      revision: choice.revision,
      root,
      candidates: choice.candidates.map((d) => `${d.metadata.name} (revision ${istiodRevision(d)})`),
    },
    'error',
  )
}

export function envValue(container: Container | undefined, name: string): {value?: string; fromRef?: boolean} {
  const entry = (container?.env ?? []).find((e) => e.name === name)
  if (!entry) return {}
  if (entry.valueFrom !== undefined) return {fromRef: true}
  return {value: entry.value ?? ''}
}
