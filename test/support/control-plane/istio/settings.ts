// What the fake Istio components read from the cluster, as the real ones do: which istiod revisions
// run (istiod Deployments in the root namespace), the injector's settings per revision (istiod env,
// the injector ConfigMap's values, the mesh config), and the revision tags (webhook labels).
import {parse as parseYaml} from 'yaml'

import type {KubeObject} from '../../../../src/planner/model.js'
import {analyzeInjectionWebhooks, type InjectionWebhooks} from '../../../../src/planner/namespace.js'
import {REVISION_LABEL} from '../../../../src/planner/vocab.js'

export const ZTUNNEL_POD_LABEL = {app: 'ztunnel'}
export const ISTIO_CNI_POD_LABEL = {'k8s-app': 'istio-cni-node'}

/** The revision an istiod Deployment serves ("default" when unlabelled). */
export function istiodRevision(deployment: KubeObject): string {
  return deployment.metadata.labels?.[REVISION_LABEL] || 'default'
}

export function isIstiod(deployment: KubeObject): boolean {
  return deployment.metadata.labels?.app === 'istiod'
}

/** Revisions whose istiod has at least one available replica: only those reconcile waypoints. */
export function runningRevisions(rootDeployments: KubeObject[]): Set<string> {
  return new Set(
    rootDeployments.filter((d) => isIstiod(d) && (d.status?.availableReplicas ?? 0) >= 1).map(istiodRevision),
  )
}

/** The injection webhooks and injector ConfigMaps of the cluster (src/planner's reading of them). */
export function injectionWebhooks(
  webhookConfigurations: KubeObject[],
  rootConfigMaps: KubeObject[],
): InjectionWebhooks {
  return analyzeInjectionWebhooks([...webhookConfigurations, ...rootConfigMaps]).webhooks
}

export type Interception = 'istio-init' | 'istio-cni'

/** How the injector of one revision shapes a sidecar. */
export interface InjectorSettings {
  revision: string
  /** The proxy image, `<hub>/proxyv2:<tag>`. */
  proxyImage: string
  /** ENABLE_NATIVE_SIDECARS of istiod: true, false, or auto (native when every node runs Kubernetes ≥ 1.33). */
  nativeSidecars: 'true' | 'false' | 'auto'
  /** meshConfig.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE. */
  hbone: boolean
  /** istio-cni installed for sidecars (istio-validation init container) or not (istio-init). */
  interception: Interception
  trustDomain: string
  /** The istiod Service address sidecars connect to. */
  discoveryAddress: string
}

function data(cm: KubeObject | undefined): Record<string, string> {
  return (cm?.data as Record<string, string> | undefined) ?? {}
}

function parse(text: string | undefined): any {
  if (text === undefined) return undefined
  try {
    return parseYaml(text)
  } catch {
    return undefined
  }
}

function envOf(deployment: KubeObject | undefined, name: string): string | undefined {
  const containers: {name?: string; env?: {name: string; value?: string}[]}[] =
    deployment?.spec?.template?.spec?.containers ?? []
  const discovery = containers.find((c) => c.name === 'discovery') ?? containers[0]
  return discovery?.env?.find((e) => e.name === name)?.value
}

function suffixed(base: string, revision: string): string {
  return revision === 'default' ? base : `${base}-${revision}`
}

/** The injector settings of `revision`, read from the root namespace's objects (chart defaults where absent). */
export function injectorSettings(
  revision: string,
  rootDeployments: KubeObject[],
  rootConfigMaps: KubeObject[],
  rootNamespace: string,
): InjectorSettings {
  const byName = (name: string) => rootConfigMaps.find((c) => c.metadata.name === name)
  const injector = byName(suffixed('istio-sidecar-injector', revision)) ?? byName('istio-sidecar-injector')
  const mesh = byName(suffixed('istio', revision)) ?? byName('istio')
  const istiod = rootDeployments.find((d) => isIstiod(d) && istiodRevision(d) === revision)
  const values = parse(data(injector).values) ?? {}
  const meshConfig = parse(data(mesh).mesh) ?? {}

  const istiodImage: string | undefined = istiod?.spec?.template?.spec?.containers?.[0]?.image
  const istiodTag =
    istiodImage && istiodImage.lastIndexOf(':') > istiodImage.lastIndexOf('/')
      ? istiodImage.slice(istiodImage.lastIndexOf(':') + 1)
      : undefined
  const hub: string = values.global?.hub ?? 'docker.io/istio'
  const tag: string = String(values.global?.tag ?? istiodTag ?? 'latest')
  const image: string = values.global?.proxy?.image ?? 'proxyv2'
  const proxyImage = image.includes('/') ? image : `${hub}/${image}:${tag}`

  const native = (envOf(istiod, 'ENABLE_NATIVE_SIDECARS') ?? values.pilot?.env?.ENABLE_NATIVE_SIDECARS ?? 'auto')
    .toString()
    .toLowerCase()
  const cni = values.pilot?.cni?.enabled ?? values.istio_cni?.enabled ?? false
  const istiodService = suffixed('istiod', revision)
  return {
    revision,
    proxyImage,
    nativeSidecars: native === 'true' ? 'true' : native === 'false' ? 'false' : 'auto',
    hbone: String(meshConfig.defaultConfig?.proxyMetadata?.ISTIO_META_ENABLE_HBONE ?? '').toLowerCase() === 'true',
    interception: cni === true || cni === 'true' ? 'istio-cni' : 'istio-init',
    trustDomain: meshConfig.trustDomain ?? 'cluster.local',
    discoveryAddress: meshConfig.defaultConfig?.discoveryAddress ?? `${istiodService}.${rootNamespace}.svc:15012`,
  }
}

/** "v1.33.2" → [1, 33]; undefined when unreadable. */
function kubeletMinor(node: KubeObject): number | undefined {
  const version: string | undefined = node.status?.nodeInfo?.kubeletVersion
  const match = version ? /^v?(\d+)\.(\d+)/.exec(version) : null
  return match && Number(match[1]) === 1 ? Number(match[2]) : undefined
}

/**
 * Whether a pod gets a native sidecar: the pod annotation sidecar.istio.io/nativeSidecar wins, else
 * istiod's ENABLE_NATIVE_SIDECARS, where `auto` means "every node runs Kubernetes ≥ 1.33" (DOMAIN §2.4).
 */
export function usesNativeSidecar(
  settings: InjectorSettings,
  podAnnotations: Record<string, string>,
  nodes: KubeObject[],
): boolean {
  const override = podAnnotations['sidecar.istio.io/nativeSidecar']?.toLowerCase()
  if (override === 'true') return true
  if (override === 'false') return false
  if (settings.nativeSidecars !== 'auto') return settings.nativeSidecars === 'true'
  return nodes.length > 0 && nodes.every((n) => (kubeletMinor(n) ?? 0) >= 33)
}
