// The offline source (`--manifests PATH`, repeatable): Kubernetes objects read from files and
// directories, e.g. a GitOps repository. Produces the same SourceSnapshot as the cluster source.
import {finding} from '../planner/findings/finding.js'
import {readdirSync, realpathSync, statSync} from 'node:fs'
import path from 'node:path'
import {Composer, type Document, LineCounter, Parser} from 'yaml'
import {ManifestError, UntrustedInputError} from '../errors.js'
import {InputRefused, readBoundedFile} from './input-limits.js'
import {isTooDeep, MAX_ALIAS_COUNT, MAX_NESTING_DEPTH, nestingDepth} from '../planner/input-limits.js'
import {objectNameProblem} from '../planner/names.js'
import type {Finding, KubeObject, SourceSnapshot, SourceTarget} from '../planner/model.js'
import {groupOf, objectKey, refOf} from '../planner/refs.js'
import type {FleetRead, ObjectSource} from './source.js'
import {isRecord} from '../planner/json.js'
import {byCodePoint} from '../planner/order.js'

const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json'])

/** Directories never descended into: VCS/tool metadata and JavaScript dependencies. */
function skipDirectory(name: string): boolean {
  return name.startsWith('.') || name === 'node_modules'
}

/**
 * Cluster-scoped kinds, as `<group>/<kind>` (core group = ""). They never get a namespace, even when a
 * manifest sets one (the API server ignores it). CRDs found in the source add their own
 * `scope: Cluster` kinds to this set.
 */
const CLUSTER_SCOPED = new Set([
  '/Namespace',
  '/Node',
  '/PersistentVolume',
  '/ComponentStatus',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'apiextensions.k8s.io/CustomResourceDefinition',
  'apiregistration.k8s.io/APIService',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
  'admissionregistration.k8s.io/MutatingAdmissionPolicy',
  'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding',
  'storage.k8s.io/StorageClass',
  'storage.k8s.io/CSIDriver',
  'storage.k8s.io/CSINode',
  'storage.k8s.io/VolumeAttachment',
  'storage.k8s.io/VolumeAttributesClass',
  'scheduling.k8s.io/PriorityClass',
  'networking.k8s.io/IngressClass',
  'networking.k8s.io/IPAddress',
  'networking.k8s.io/ServiceCIDR',
  'node.k8s.io/RuntimeClass',
  'certificates.k8s.io/CertificateSigningRequest',
  'certificates.k8s.io/ClusterTrustBundle',
  'flowcontrol.apiserver.k8s.io/FlowSchema',
  'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration',
  'policy/PodSecurityPolicy',
  'resource.k8s.io/DeviceClass',
  'resource.k8s.io/ResourceSlice',
  'gateway.networking.k8s.io/GatewayClass',
  // Sail operator (OpenShift Service Mesh 3) control-plane resources.
  'sailoperator.io/Istio',
  'sailoperator.io/IstioRevision',
  'sailoperator.io/IstioRevisionTag',
  'sailoperator.io/IstioCNI',
  'sailoperator.io/ZTunnel',
  'cert-manager.io/ClusterIssuer',
])

function scopeKey(apiVersion: string, kind: string): string {
  return `${groupOf(apiVersion)}/${kind}`
}

/** One object with the file it came from (for duplicate reporting). */
interface SourcedObject {
  object: KubeObject
  file: string
}

export interface LoadedManifests {
  objects: KubeObject[]
  /** Every file read, in the order it was read (which decides duplicates: later wins). */
  files: string[]
  findings: Finding[]
}

/**
 * Reads manifests from files and directories.
 *
 * - Directories are walked recursively; `.yaml`, `.yml` and `.json` files are read, dot-files,
 *   dot-directories and `node_modules` are skipped. Paths are taken in the order given; the files of a
 *   directory in sorted (byte-wise) order. A path named explicitly is read whatever its extension.
 * - Multi-document YAML (YAML 1.2 core schema, merge keys as kubectl accepts them), `kind: List` and
 *   typed lists (`DeploymentList`…) are expanded. JSON is read with the same parser (JSON is YAML 1.2),
 *   so errors carry line and column either way.
 * - Namespace defaulting (SPEC §3): a namespaced object without `metadata.namespace` takes the
 *   namespace of the only Namespace object in its file, else of the only Namespace object in the whole
 *   source, else `opts.defaultNamespace` (left unset when that is not given). Cluster-scoped kinds never
 *   have a namespace.
 * - The same object (same `refKey`: group, kind, namespace, name — at any API version) twice: the one
 *   read later wins, with a warning naming both files.
 *
 * Throws ManifestError for a path that does not exist and for malformed YAML/JSON
 * (`<file>:<line>:<col>: <what is wrong>`).
 */
export async function loadManifestFiles(
  paths: string[],
  opts: {defaultNamespace?: string} = {},
): Promise<LoadedManifests> {
  const findings: Finding[] = []
  const files = collectFiles(paths)

  const perFile: {file: string; objects: KubeObject[]}[] = []
  for (const file of files) {
    let text: string
    try {
      text = readBoundedFile(file)
    } catch (error) {
      if (error instanceof InputRefused)
        throw new UntrustedInputError(error.message, {
          file,
          suggestion: 'Pass regular files or directories of manifests with --manifests.',
        })
      throw new ManifestError(
        `${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
        {
          file,
          cause: error,
          suggestion: 'Check the file permissions, or remove the file from --manifests.',
        },
      )
    }
    const parsed = parseManifestText(text, file)
    findings.push(...parsed.findings)
    perFile.push({file, objects: parsed.objects})
  }

  const clusterScoped = new Set(CLUSTER_SCOPED)
  for (const {objects} of perFile) {
    for (const obj of objects) {
      if (obj.kind === 'CustomResourceDefinition' && obj.spec?.scope === 'Cluster') {
        const group = obj.spec?.group
        const kind = obj.spec?.names?.kind
        if (typeof group === 'string' && typeof kind === 'string') clusterScoped.add(`${group}/${kind}`)
      }
    }
  }
  const isClusterScoped = (obj: KubeObject) => clusterScoped.has(scopeKey(obj.apiVersion, obj.kind))

  const namespacesIn = (objects: KubeObject[]) =>
    objects.filter((o) => o.kind === 'Namespace' && groupOf(o.apiVersion) === '').map((o) => o.metadata.name)
  const sourceNamespaces = namespacesIn(perFile.flatMap((f) => f.objects))
  const sourceDefault = sourceNamespaces.length === 1 ? sourceNamespaces[0] : undefined

  const byKey = new Map<string, SourcedObject>()
  for (const {file, objects} of perFile) {
    const fileNamespaces = namespacesIn(objects)
    const fileDefault = fileNamespaces.length === 1 ? fileNamespaces[0] : undefined
    for (const obj of objects) {
      if (isClusterScoped(obj)) {
        delete obj.metadata.namespace
      } else if (obj.metadata.namespace === undefined || obj.metadata.namespace === '') {
        const ns = fileDefault ?? sourceDefault ?? opts.defaultNamespace
        if (ns === undefined) delete obj.metadata.namespace
        else obj.metadata.namespace = ns
      }
      const key = objectKey(obj)
      const earlier = byKey.get(key)
      if (earlier) {
        // Delete first so that the surviving object takes the later position, as if read last.
        byKey.delete(key)
        findings.push(
          finding(
            'ManifestDuplicate',
            refOf(obj),
            {
              describe: describe(obj),
              file: earlier.file,
              apiVersion: earlier.object.apiVersion,
              file2: file,
              apiVersion2: obj.apiVersion,
            },
            {id: `manifest-duplicate/${key}`, severity: 'warning'},
          ),
        )
      }
      byKey.set(key, {object: obj, file})
    }
  }

  return {objects: [...byKey.values()].map((s) => s.object), files, findings}
}

function describe(obj: KubeObject): string {
  return obj.metadata.namespace
    ? `${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}`
    : `${obj.kind} ${obj.metadata.name}`
}

/**
 * Expands paths to the list of files to read, in reading order, each file once. Files are listed and read
 * synchronously: the command waits for them anyway, and every awaited fs call is a round trip through libuv's
 * thread pool (~7 ms of an offline inventory of bookinfo's seven files, issue 11 §3).
 */
function collectFiles(paths: string[]): string[] {
  const out: string[] = []
  const seen = new Set<string>()
  const add = (file: string) => {
    const real = realpathSync(file)
    if (seen.has(real)) return
    seen.add(real)
    out.push(file)
  }
  for (const given of paths) {
    let info
    try {
      info = statSync(given)
    } catch (error) {
      throw new ManifestError(`${given}: no such file or directory`, {
        file: given,
        cause: error,
        suggestion: 'Check the --manifests path (files or directories of YAML/JSON manifests).',
      })
    }
    if (info.isDirectory()) {
      const found: string[] = []
      walk(given, found, new Set([realpathSync(given)]))
      found.sort(byCodePoint)
      for (const file of found) add(file)
    } else {
      add(given)
    }
  }
  return out
}

/** Recursive directory walk; `visited` holds real paths of directories to survive symlink loops. */
function walk(dir: string, out: string[], visited: Set<string>): void {
  const entries = readdirSync(dir, {withFileTypes: true})
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue
    const full = path.join(dir, entry.name)
    let isDir = entry.isDirectory()
    let isFile = entry.isFile()
    if (entry.isSymbolicLink()) {
      try {
        const target = statSync(full)
        isDir = target.isDirectory()
        isFile = target.isFile()
      } catch {
        continue // dangling link
      }
    }
    if (isDir) {
      if (skipDirectory(entry.name)) continue
      const real = realpathSync(full)
      if (visited.has(real)) continue
      visited.add(real)
      walk(full, out, visited)
    } else if (isFile && MANIFEST_EXTENSIONS.has(path.extname(entry.name).toLowerCase())) {
      out.push(full)
    }
  }
}

/** Template markers of Helm / Go templates, which are not manifests until rendered. */
const TEMPLATE_MARKER = /\{\{[\s\S]*?\}\}/

const YAML_OPTIONS = {version: '1.2', schema: 'core', merge: true, prettyErrors: false} as const

/**
 * The documents of a YAML stream one at a time (what parseAllDocuments does, without the array): each is turned
 * into objects and dropped before the next is composed, so that a large file never holds the syntax trees of all
 * its documents at once (issue 11: planning 5,000 services within 1 GiB).
 */
function documentsOf(text: string, lineCounter: LineCounter): Generator<Document.Parsed, void> {
  return new Composer(YAML_OPTIONS).compose(new Parser(lineCounter.addNewLine).parse(text))
}

/**
 * Parses one file's text into objects. Exported for tests and for reading manifests from stdin later.
 * `file` is used in messages only.
 */
export function parseManifestText(text: string, file: string): {objects: KubeObject[]; findings: Finding[]} {
  const out = {objects: [] as KubeObject[], findings: [] as Finding[]}
  const lineCounter = new LineCounter()
  const documents = documentsOf(text, lineCounter)
  let index = 0
  try {
    for (const doc of documents) {
      if (doc.errors.length > 0) return unparsable(text, file, doc, documents, lineCounter)
      collectObjects(text, file, doc, index++, lineCounter, out)
    }
  } catch (error) {
    if (!isTooDeep(error)) throw error
    throw tooDeep(file, index)
  }
  return out
}

function tooDeep(file: string, index: number): UntrustedInputError {
  return new UntrustedInputError(
    `${file}: document ${index + 1} is nested more than ${MAX_NESTING_DEPTH} levels deep (the input limit)`,
    {file, suggestion: `Fix or remove document ${index + 1} of ${file}: no Kubernetes object is nested that deep.`},
  )
}

/**
 * A document that is not valid YAML: an unrendered Helm/Go template is skipped with a finding (none of the file's
 * objects are taken); anything else is an error at its line, counting the errors of the documents after it.
 */
function unparsable(
  text: string,
  file: string,
  doc: Document.Parsed,
  rest: Iterable<Document.Parsed>,
  lineCounter: LineCounter,
): {objects: KubeObject[]; findings: Finding[]} {
  if (TEMPLATE_MARKER.test(text)) {
    return {
      objects: [],
      findings: [finding('ManifestTemplate', undefined, {variant: 'file', file}, {id: `manifest-skipped/${file}`})],
    }
  }
  const error = doc.errors[0]!
  // yaml reports a stack overflow in its composer as an error of the document.
  if (/call stack/i.test(error.message)) throw tooDeep(file, 0)
  const pos = lineCounter.linePos(error.pos[0])
  let others = doc.errors.length - 1
  for (const later of rest) others += later.errors.length
  throw new ManifestError(
    `${file}:${pos.line}:${pos.col}: ${firstLine(error.message)}${others > 0 ? ` (and ${others} more error${others > 1 ? 's' : ''})` : ''}`,
    {
      file,
      line: pos.line,
      column: pos.col,
      suggestion: `Fix the YAML at ${file}:${pos.line}:${pos.col} (e.g. check indentation and quoting), or remove the file from --manifests.`,
    },
  )
}

/** The objects of one valid document (a List gives its items), and findings for what is not an object. */
function collectObjects(
  text: string,
  file: string,
  doc: Document.Parsed,
  index: number,
  lineCounter: LineCounter,
  out: {objects: KubeObject[]; findings: Finding[]},
): void {
  let value: unknown
  try {
    value = doc.toJS({maxAliasCount: MAX_ALIAS_COUNT})
  } catch (error) {
    if (isTooDeep(error)) throw tooDeep(file, index)
    // e.g. "Excessive alias count": a YAML bomb or a runaway anchor.
    const pos = lineCounter.linePos(doc.range[0])
    throw new UntrustedInputError(`${file}:${pos.line}:${pos.col}: ${(error as Error).message}`, {
      file,
      line: pos.line,
      column: pos.col,
      cause: error,
      suggestion: `Fix document ${index + 1} of ${file}, or remove the file from --manifests.`,
    })
  }
  if (value === null || value === undefined) return // empty document, e.g. a trailing `---` or only comments
  if (nestingDepth(value) > MAX_NESTING_DEPTH) throw tooDeep(file, index)
  // The line of the document's content, not of its `---` marker.
  const line = lineCounter.linePos(doc.contents?.range[0] ?? doc.range[0]).line
  for (const candidate of expandLists(value, '')) {
    const problem = whyNotAnObject(candidate.value)
    if (problem && TEMPLATE_MARKER.test(text.slice(doc.range[0], doc.range[2]))) {
      // `name: {{ .Release.Name }}` is valid YAML (a flow mapping), just not a name.
      out.findings.push(templateFinding(file, index, line, candidate))
      continue
    }
    if (problem) {
      out.findings.push(skippedFinding(file, index, line, candidate, problem))
      continue
    }
    const obj = candidate.value as KubeObject
    if (TEMPLATE_MARKER.test(obj.metadata.name) || TEMPLATE_MARKER.test(String(obj.metadata.namespace ?? ''))) {
      // Valid YAML, but an unrendered template (`name: "{{ .Release.Name }}"`): not a real object.
      out.findings.push(templateFinding(file, index, line, candidate))
      continue
    }
    const ns = obj.metadata.namespace
    if (typeof ns !== 'string' || ns === '') delete obj.metadata.namespace
    // A name from a repository becomes a plan file's name and request paths: `../../x/pwned` never does (issue 20 §1).
    const {name, namespace} = obj.metadata
    const badName = objectNameProblem({apiVersion: obj.apiVersion, kind: obj.kind, name, namespace})
    if (badName)
      throw new UntrustedInputError(`${file}:${line}: ${badName}`, {
        file,
        line,
        suggestion: `Fix the name in ${file} (line ${line}): Kubernetes would refuse this object.`,
      })
    out.objects.push(obj)
  }
}

interface Candidate {
  value: unknown
  /** JSON path inside the document ("" for the document itself, "items[2]" for a List item). */
  at: string
}

/** `kind: List` and typed lists (`DeploymentList`) become their items; anything else is itself. */
function expandLists(value: unknown, at: string): Candidate[] {
  if (
    !isRecord(value) ||
    typeof value.kind !== 'string' ||
    !value.kind.endsWith('List') ||
    !Array.isArray(value.items)
  ) {
    return [{value, at}]
  }
  const listKind = value.kind
  const listApiVersion = value.apiVersion
  return value.items.flatMap((item, i) => {
    const itemAt = `${at}${at ? '.' : ''}items[${i}]`
    // Items of typed lists (what the API returns for `DeploymentList`) carry no apiVersion/kind.
    if (isRecord(item) && listKind !== 'List') {
      if (item.kind === undefined) item.kind = listKind.slice(0, -'List'.length)
      if (item.apiVersion === undefined && typeof listApiVersion === 'string') item.apiVersion = listApiVersion
    }
    return expandLists(item, itemAt)
  })
}

/** Undefined when `value` is a usable Kubernetes object, else what is missing. */
function whyNotAnObject(value: unknown): string | undefined {
  if (!isRecord(value))
    return Array.isArray(value) ? 'a YAML sequence, not an object' : `a ${typeof value}, not an object`
  const missing: string[] = []
  if (typeof value.apiVersion !== 'string' || value.apiVersion === '') missing.push('apiVersion')
  if (typeof value.kind !== 'string' || value.kind === '') missing.push('kind')
  const meta = value.metadata
  if (!isRecord(meta) || typeof meta.name !== 'string' || meta.name === '') {
    missing.push(
      isRecord(meta) && typeof meta.generateName === 'string'
        ? 'metadata.name (it uses generateName)'
        : 'metadata.name',
    )
  }
  return missing.length > 0 ? `no ${missing.join(', no ')}` : undefined
}

function templateFinding(file: string, index: number, line: number, candidate: Candidate): Finding {
  return finding(
    'ManifestTemplate',
    undefined,
    {variant: 'document', file, document: index + 1, line},
    {id: `manifest-skipped/${file}#${index + 1}${candidate.at ? `/${candidate.at}` : ''}`},
  )
}

function skippedFinding(file: string, index: number, line: number, candidate: Candidate, problem: string): Finding {
  const document = `${file} document ${index + 1} (line ${line})${candidate.at ? ` ${candidate.at}` : ''}`
  const value = candidate.value
  const id = `manifest-skipped/${file}#${index + 1}${candidate.at ? `/${candidate.at}` : ''}`
  const skipped = (variant: 'kustomization' | 'helmChart' | 'notAnObject') =>
    finding('ManifestSkipped', undefined, {variant, document}, {id, severity: 'info'})
  if (isRecord(value)) {
    const apiVersion = typeof value.apiVersion === 'string' ? value.apiVersion : ''
    if (value.kind === 'Kustomization' && apiVersion.startsWith('kustomize.config.k8s.io/'))
      return skipped('kustomization')
    if (
      (apiVersion === 'v1' || apiVersion === 'v2') &&
      typeof value.name === 'string' &&
      'version' in value &&
      !('kind' in value)
    )
      return skipped('helmChart')
    if (value.apiVersion === undefined && value.kind === undefined) return skipped('notAnObject')
  }
  return finding('ManifestSkipped', undefined, {variant: 'invalidObject', document, problem}, {id, severity: 'warning'})
}

function firstLine(message: string): string {
  // yaml's messages end with " at line L, column C:" and a code excerpt; the position is already in the prefix.
  const line = message.split('\n')[0] ?? message
  return line.replace(/ at line \d+, column \d+:?$/, '')
}

/** `--manifests`: objects from files and directories (see loadManifestFiles for the rules). */
/**
 * A namespace the manifests neither declare nor put anything in is a mistake (a typo, the wrong
 * directory), as a namespace missing from a cluster is — not "nothing to migrate".
 */
function namespaceNotInManifests(namespace: string, objects: KubeObject[], paths: string[]): Finding[] {
  const found = new Set<string>()
  for (const o of objects) {
    if (o.kind === 'Namespace' && o.apiVersion === 'v1') found.add(o.metadata.name)
    else if (o.metadata.namespace) found.add(o.metadata.namespace)
  }
  if (found.has(namespace)) return []
  const names = [...found].sort()
  return [
    finding(
      'NamespaceNotFound',
      undefined,
      names.length === 0
        ? {variant: 'notInManifests', namespace, paths}
        : {
            variant: names.length === 1 ? 'otherNamespaceInManifests' : 'otherNamespacesInManifests',
            namespace,
            paths,
            namespaces: names,
          },
      {id: `namespace-not-found/${namespace}`, severity: 'error'},
    ),
  ]
}

export class ManifestSource implements ObjectSource {
  readonly target: SourceTarget

  constructor(private readonly paths: string[]) {
    this.target = {manifests: [...paths]}
  }

  async snapshot(namespace: string, opts: {rootNamespace: string}): Promise<SourceSnapshot> {
    const loaded = await loadManifestFiles(this.paths, {defaultNamespace: namespace})
    return this.snapshotOf(namespace, loaded, opts.rootNamespace)
  }

  private snapshotOf(namespace: string, loaded: LoadedManifests, rootNamespace: string): SourceSnapshot {
    return {
      namespace,
      rootNamespace,
      target: this.target,
      objects: loaded.objects,
      // Files cannot tell which CRDs a cluster has installed; the cluster source reports those.
      missingKinds: [],
      findings: [...loaded.findings, ...namespaceNotInManifests(namespace, loaded.objects, this.paths)],
    }
  }

  /**
   * The files are read once; objects that would take the planned namespace by default (SPEC §3) get a
   * placeholder namespace, replaced per namespace — the same snapshot as `snapshot(namespace)`.
   */
  async fleet(opts: {rootNamespace: string}): Promise<FleetRead> {
    const loaded = await loadManifestFiles(this.paths, {defaultNamespace: DEFAULT_PLACEHOLDER})
    const seen = new Map<string, KubeObject>()
    for (const o of loaded.objects)
      if (o.kind === 'Namespace' && groupOf(o.apiVersion) === '') seen.set(o.metadata.name, o)
    // Namespaces only named by objects (no Namespace manifest) can still be planned by name.
    for (const o of loaded.objects) {
      const ns = o.metadata.namespace
      if (ns && ns !== DEFAULT_PLACEHOLDER && !seen.has(ns))
        seen.set(ns, {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}})
    }
    const place =
      (ns: string) =>
      (o: KubeObject): KubeObject =>
        o.metadata.namespace === DEFAULT_PLACEHOLDER ? {...o, metadata: {...o.metadata, namespace: ns}} : o
    const placeText = (ns: string) => (text: string) => text.split(DEFAULT_PLACEHOLDER).join(ns)
    return {
      namespaces: [...seen.values()],
      snapshot: async (ns) =>
        this.snapshotOf(
          ns,
          {
            ...loaded,
            objects: loaded.objects.map(place(ns)),
            findings: loaded.findings.map((f) => ({
              ...f,
              id: placeText(ns)(f.id),
              message: placeText(ns)(f.message),
              ...(f.ref?.namespace === DEFAULT_PLACEHOLDER ? {ref: {...f.ref, namespace: ns}} : {}),
            })),
          },
          opts.rootNamespace,
        ),
    }
  }
}

/** Stands for "the namespace being planned" in a fleet read (not a valid namespace name, so never a real one). */
const DEFAULT_PLACEHOLDER = '<planned namespace>'
