import {mkdir, mkdtemp, rm, symlink, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'
import {ManifestError, UserError} from '../../src/errors.js'
import {ManifestSource, loadManifestFiles, parseManifestText} from '../../src/sources/manifests.js'

let dir: string

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'mesh-migrate-manifests-'))
})
afterEach(async () => {
  await rm(dir, {recursive: true, force: true})
})

async function write(rel: string, text: string): Promise<string> {
  const file = path.join(dir, rel)
  await mkdir(path.dirname(file), {recursive: true})
  await writeFile(file, text)
  return file
}

const names = (objs: {kind: string; metadata: {name: string; namespace?: string}}[]) =>
  objs.map((o) => `${o.kind}/${o.metadata.namespace ?? '-'}/${o.metadata.name}`)

describe('loadManifestFiles', () => {
  it('reads multi-document YAML, skipping empty documents and comments-only documents', async () => {
    const f = await write(
      'app.yaml',
      `---
apiVersion: v1
kind: Service
metadata: {name: a, namespace: shop}
---
# nothing here
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: b, namespace: shop}
---
`,
    )
    const out = await loadManifestFiles([f])
    expect(names(out.objects)).toEqual(['Service/shop/a', 'Deployment/shop/b'])
    expect(out.files).toEqual([f])
    expect(out.findings).toEqual([])
  })

  it('expands kind: List and typed lists, inferring kind/apiVersion of typed-list items', async () => {
    const f = await write(
      'list.yaml',
      `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: one, namespace: x}
- apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata: {name: two, namespace: x}
---
apiVersion: apps/v1
kind: DeploymentList
items:
- metadata: {name: three, namespace: x}
  spec: {}
`,
    )
    const out = await loadManifestFiles([f])
    expect(names(out.objects)).toEqual(['ConfigMap/x/one', 'VirtualService/x/two', 'Deployment/x/three'])
    expect(out.objects[2]!.apiVersion).toBe('apps/v1')
  })

  it('reads JSON files, including a JSON List', async () => {
    const f = await write(
      'objs.json',
      JSON.stringify(
        {
          apiVersion: 'v1',
          kind: 'List',
          items: [{apiVersion: 'v1', kind: 'Service', metadata: {name: 's', namespace: 'j'}}],
        },
        null,
        '\t',
      ),
    )
    const out = await loadManifestFiles([f])
    expect(names(out.objects)).toEqual(['Service/j/s'])
  })

  it('walks directories recursively in sorted order, skipping dot-dirs, dot-files, node_modules and other extensions', async () => {
    const svc = (n: string) => `apiVersion: v1\nkind: Service\nmetadata: {name: ${n}, namespace: ns}\n`
    await write('b.yml', svc('b'))
    await write('a/z.yaml', svc('az'))
    await write('a.yaml', svc('a'))
    await write(
      'c/d/e.JSON',
      JSON.stringify({apiVersion: 'v1', kind: 'Service', metadata: {name: 'cde', namespace: 'ns'}}),
    )
    await write('.git/x.yaml', svc('git'))
    await write('.gitlab-ci.yml', 'stages: [build]\n')
    await write('node_modules/pkg/y.yaml', svc('nm'))
    await write('README.md', '# not yaml')
    await write('notes.txt', svc('txt'))
    const out = await loadManifestFiles([dir])
    expect(out.files.map((f) => path.relative(dir, f))).toEqual(['a.yaml', 'a/z.yaml', 'b.yml', 'c/d/e.JSON'])
    expect(names(out.objects)).toEqual(['Service/ns/a', 'Service/ns/az', 'Service/ns/b', 'Service/ns/cde'])
  })

  it('reads a file named explicitly whatever its extension, and each file once', async () => {
    const f = await write('manifest.txt', 'apiVersion: v1\nkind: Service\nmetadata: {name: t, namespace: n}\n')
    const out = await loadManifestFiles([f, dir, f])
    expect(out.files).toEqual([f])
    expect(names(out.objects)).toEqual(['Service/n/t'])
  })

  it('survives a symlink loop', async () => {
    await write('sub/s.yaml', 'apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: n}\n')
    await symlink(dir, path.join(dir, 'sub', 'loop'))
    const out = await loadManifestFiles([dir])
    expect(names(out.objects)).toEqual(['Service/n/s'])
  })

  it('fails on a path that does not exist, naming it', async () => {
    const missing = path.join(dir, 'nope')
    const error = await loadManifestFiles([missing]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ManifestError)
    expect(error).toBeInstanceOf(UserError)
    expect((error as ManifestError).message).toContain(missing)
    expect((error as ManifestError).exitCode).toBe(1)
    expect((error as ManifestError).suggestion).toMatch(/--manifests/)
  })

  it('fails on malformed YAML with file:line:col and a suggestion', async () => {
    const f = await write(
      'bad.yaml',
      `apiVersion: v1
kind: Service
metadata:
  name: ok
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: x
    namespace: y
`,
    )
    const error = (await loadManifestFiles([f]).catch((e: unknown) => e)) as ManifestError
    expect(error).toBeInstanceOf(ManifestError)
    expect(error.message).toMatch(new RegExp(`^${escape(f)}:9:9: `))
    expect(error.line).toBe(9)
    expect(error.column).toBe(9)
    expect(error.file).toBe(f)
    expect(error.suggestion).toContain(`${f}:9:9`)
  })

  it('fails on malformed JSON with file:line:col', async () => {
    const f = await write('bad.json', '{\n  "apiVersion": "v1",\n  "kind": "Service"\n  "metadata": {}\n}\n')
    const error = (await loadManifestFiles([f]).catch((e: unknown) => e)) as ManifestError
    expect(error).toBeInstanceOf(ManifestError)
    expect(error.message).toMatch(new RegExp(`^${escape(f)}:\\d+:\\d+: \\S`))
    expect(error.line).toBeGreaterThanOrEqual(3)
  })

  it('reports the first broken document and counts the errors of the documents after it', () => {
    const text = [
      'apiVersion: v1\nkind: Service\nmetadata: {name: ok}',
      'apiVersion: v1\nkind: ConfigMap\nkind: Pod\nmetadata: {name: a}',
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\nmetadata: {name: c}',
    ].join('\n---\n')
    expect(() => parseManifestText(text, 'many.yaml')).toThrow(/^many\.yaml:7:1: .*unique.* \(and 1 more error\)$/)
  })

  it('rejects duplicate keys (as kubectl does)', () => {
    expect(() =>
      parseManifestText('apiVersion: v1\nkind: Service\nkind: Pod\nmetadata: {name: a}\n', 'dup.yaml'),
    ).toThrow(/^dup\.yaml:3:1: .*unique/)
  })

  it('skips unrendered Helm templates with a finding instead of failing', async () => {
    const f = await write(
      'chart/templates/deploy.yaml',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  labels:\n{{ include "labels" . | indent 4 }}\n',
    )
    const out = await loadManifestFiles([f])
    expect(out.objects).toEqual([])
    expect(out.findings).toHaveLength(1)
    expect(out.findings[0]!.code).toBe('ManifestTemplate')
    expect(out.findings[0]!.message).toContain(f)
    expect(out.findings[0]!.fix).toContain('helm template')
  })

  it('skips a template whose quoted name parses as a string', () => {
    const out = parseManifestText(
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: "{{ .Release.Name }}-svc"\n',
      't.yaml',
    )
    expect(out.objects).toEqual([])
    expect(out.findings.map((f) => f.code)).toEqual(['ManifestTemplate'])
  })

  it('reads ConfigMaps whose data contains template text (the sidecar injector)', () => {
    const out = parseManifestText(
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-sidecar-injector, namespace: istio-system}\ndata:\n  config: |\n    image: "{{ .Values.hub }}"\n',
      'cm.yaml',
    )
    expect(names(out.objects)).toEqual(['ConfigMap/istio-system/istio-sidecar-injector'])
  })

  it('skips documents that are not objects, naming file and document, and recognises Kustomize/Helm files', async () => {
    await write(
      'kustomization.yaml',
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n',
    )
    await write('Chart.yaml', 'apiVersion: v2\nname: shop\nversion: 1.0.0\n')
    await write('values.yaml', 'replicas: 3\n')
    await write(
      'partial.yaml',
      'apiVersion: v1\nkind: Service\nmetadata: {name: ok, namespace: n}\n---\napiVersion: v1\nkind: Pod\nmetadata: {generateName: web-}\n---\n- a\n- b\n',
    )
    const out = await loadManifestFiles([dir])
    expect(names(out.objects)).toEqual(['Service/n/ok'])
    const byFile = (name: string) => out.findings.filter((f) => f.message.includes(path.join(dir, name)))
    expect(byFile('kustomization.yaml')[0]).toMatchObject({
      severity: 'info',
      message: expect.stringMatching(/Kustomize/),
    })
    expect(byFile('kustomization.yaml')[0]!.fix).toContain('kustomize build')
    expect(byFile('Chart.yaml')[0]).toMatchObject({severity: 'info', message: expect.stringMatching(/Helm chart/)})
    expect(byFile('values.yaml')[0]).toMatchObject({
      severity: 'info',
      message: expect.stringMatching(/not a Kubernetes object/),
    })
    const partial = byFile('partial.yaml')
    expect(partial.map((f) => f.message)).toEqual([
      expect.stringMatching(/document 2 \(line 5\) was skipped: no metadata\.name \(it uses generateName\)/),
      expect.stringMatching(/document 3 \(line 9\) was skipped: a YAML sequence/),
    ])
    expect(partial.map((f) => f.severity)).toEqual(['warning', 'warning'])
    // Stable ids: same input, same id.
    expect(partial[0]!.id).toBe(`manifest-skipped/${path.join(dir, 'partial.yaml')}#2`)
  })

  it('keys objects by group/kind/namespace/name: a later file wins over an earlier one, at any API version, with a warning', async () => {
    const vs = (v: string, host: string) =>
      `apiVersion: networking.istio.io/${v}\nkind: VirtualService\nmetadata: {name: r, namespace: shop}\nspec: {hosts: [${host}]}\n`
    const a = await write('a.yaml', vs('v1alpha3', 'old'))
    const b = await write('b.yaml', vs('v1', 'new'))
    const out = await loadManifestFiles([dir])
    expect(out.objects).toHaveLength(1)
    expect(out.objects[0]!.apiVersion).toBe('networking.istio.io/v1')
    expect(out.objects[0]!.spec.hosts).toEqual(['new'])
    expect(out.findings).toHaveLength(1)
    const dup = out.findings[0]!
    expect(dup).toMatchObject({code: 'ManifestDuplicate', severity: 'warning'})
    expect(dup.message).toContain(a)
    expect(dup.message).toContain(b)
    expect(dup.ref).toMatchObject({kind: 'VirtualService', namespace: 'shop', name: 'r'})
  })

  it('takes paths in the order given: a later --manifests path overrides an earlier one', async () => {
    const cm = (v: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\ndata: {v: "${v}"}\n`
    const base = await write('z-base.yaml', cm('base'))
    const overlay = await write('a-overlay.yaml', cm('overlay'))
    const out = await loadManifestFiles([base, overlay])
    expect(out.objects[0]!.data).toEqual({v: 'overlay'})
  })

  it('does not treat the same name in different groups or namespaces as duplicates', async () => {
    await write(
      'x.yaml',
      `apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: g, namespace: n}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g, namespace: n}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: g, namespace: other}
`,
    )
    const out = await loadManifestFiles([dir])
    expect(out.objects).toHaveLength(3)
    expect(out.findings).toEqual([])
  })

  describe('namespace defaulting', () => {
    const svc = (n: string, ns?: string) =>
      `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${n}\n${ns ? `  namespace: ${ns}\n` : ''}`
    const nsObj = (n: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${n}\n`

    it('uses the only Namespace object of the same file', async () => {
      await write('one.yaml', `${nsObj('shop')}---\n${svc('a')}`)
      await write('two.yaml', `${nsObj('other')}---\n${svc('b')}`)
      const out = await loadManifestFiles([dir], {defaultNamespace: 'arg'})
      expect(names(out.objects)).toEqual(['Namespace/-/shop', 'Service/shop/a', 'Namespace/-/other', 'Service/other/b'])
    })

    it('else the only Namespace object of the whole source', async () => {
      await write('ns.yaml', nsObj('shop'))
      await write('svc.yaml', svc('a'))
      const out = await loadManifestFiles([dir], {defaultNamespace: 'arg'})
      expect(names(out.objects)).toContain('Service/shop/a')
    })

    it('else the namespace argument', async () => {
      await write('ns.yaml', `${nsObj('one')}---\n${nsObj('two')}`)
      await write('svc.yaml', svc('a'))
      const out = await loadManifestFiles([dir], {defaultNamespace: 'arg'})
      expect(names(out.objects)).toContain('Service/arg/a')
    })

    it('leaves the namespace unset without an argument, and keeps explicit namespaces', async () => {
      await write(
        'svc.yaml',
        `${svc('a')}---\n${svc('b', 'explicit')}---\napiVersion: v1\nkind: Service\nmetadata: {name: c, namespace: ""}\n`,
      )
      const out = await loadManifestFiles([dir])
      expect(names(out.objects)).toEqual(['Service/-/a', 'Service/explicit/b', 'Service/-/c'])
      expect(out.objects[0]!.metadata).not.toHaveProperty('namespace')
    })

    it('never gives cluster-scoped kinds a namespace, and drops one set by mistake', async () => {
      await write(
        'cluster.yaml',
        [
          nsObj('shop'),
          'apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: istio-sidecar-injector}\n',
          'apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: istio-waypoint, namespace: shop}\n',
          'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: crb}\n',
          'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, scope: Cluster, names: {kind: Widget}}\n',
          'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n',
          'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n',
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n',
          // Same kind name in a namespaced group stays namespaced.
          'apiVersion: example.org/v1\nkind: Widget\nmetadata: {name: w2}\n',
        ].join('---\n'),
      )
      const out = await loadManifestFiles([dir], {defaultNamespace: 'arg'})
      expect(names(out.objects)).toEqual([
        'Namespace/-/shop',
        'MutatingWebhookConfiguration/-/istio-sidecar-injector',
        'GatewayClass/-/istio-waypoint',
        'ClusterRoleBinding/-/crb',
        'CustomResourceDefinition/-/widgets.example.com',
        'Widget/-/w',
        'PriorityClass/-/high',
        'ConfigMap/shop/cm',
        'Widget/shop/w2',
      ])
    })
  })

  it('reads YAML with the 1.2 core schema (yes/on stay strings) and merge keys', () => {
    const out = parseManifestText(
      `apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  labels: &l {a: yes, b: on, c: "true"}
  annotations:
    <<: *l
    d: x
`,
      'c.yaml',
    )
    const meta = out.objects[0]!.metadata
    expect(meta.labels).toEqual({a: 'yes', b: 'on', c: 'true'})
    expect(meta.annotations).toEqual({a: 'yes', b: 'on', c: 'true', d: 'x'})
  })
})

describe('ManifestSource', () => {
  it('returns every object of every namespace, the paths as given, and no missing kinds', async () => {
    await write(
      'all.yaml',
      `apiVersion: v1
kind: Service
metadata: {name: a}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: root, namespace: istio-system}
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: elsewhere}
`,
    )
    await write('skip.yaml', 'just: data\n')
    const source = new ManifestSource([dir])
    expect(source.target).toEqual({manifests: [dir]})
    const snap = await source.snapshot('shop', {rootNamespace: 'istio-system'})
    expect(snap.namespace).toBe('shop')
    expect(snap.rootNamespace).toBe('istio-system')
    expect(snap.target).toEqual({manifests: [dir]})
    expect(snap.missingKinds).toEqual([])
    expect(names(snap.objects)).toEqual([
      'Service/shop/a',
      'AuthorizationPolicy/istio-system/root',
      'Service/elsewhere/other',
    ])
    expect(snap.findings.map((f) => f.code)).toEqual(['ManifestSkipped'])
    // JSON-serialisable snapshot.
    expect(JSON.parse(JSON.stringify(snap))).toEqual(snap)
  })
})

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

describe('parseManifestText limits', () => {
  it('refuses alias bombs with file:line:col instead of expanding them', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for (let i = 1; i < 12; i++)
      lines.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)}]`,
      )
    expect(() => parseManifestText(lines.join('\n'), 'bomb.yaml')).toThrow(/^bomb\.yaml:1:1: .*alias/i)
  })
})
