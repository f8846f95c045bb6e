// The deep copy plans make of objects read from manifests and the API (src/planner/json.ts cloneJson): what
// structuredClone kept, it keeps; an own `__proto__` key (JSON.parse and yaml read one from a manifest) stays a key.
import {describe, expect, it} from 'vitest'
import {parse} from 'yaml'

import {cleanObject, stableJson} from '../../src/planner/canonical.js'
import {cloneJson} from '../../src/planner/json.js'
import type {KubeObject} from '../../src/planner/model.js'

describe('cloneJson', () => {
  it('copies JSON data deeply, as structuredClone does', () => {
    const value = {a: [1, {b: 'x', c: null, d: undefined}], e: {f: true, g: [[2]]}, h: ''}
    const copy = cloneJson(value)
    expect(copy).toStrictEqual(structuredClone(value))
    expect('d' in (copy.a[1] as object)).toBe(true)
    ;(copy.e.g[0] as number[]).push(3)
    expect(value.e.g).toEqual([[2]])
    expect(copy.a).not.toBe(value.a)
  })

  it('keeps an own __proto__ key a key, from JSON and from YAML alike', () => {
    for (const value of [
      JSON.parse('{"spec": {"__proto__": {"x": 1}, "b": 2}}') as Record<string, unknown>,
      parse('spec:\n  __proto__:\n    x: 1\n  b: 2\n') as Record<string, unknown>,
    ]) {
      const copy = cloneJson(value)
      const spec = copy.spec as Record<string, unknown>
      expect(Object.keys(spec)).toEqual(['__proto__', 'b'])
      expect(Object.getPrototypeOf(spec)).toBe(Object.prototype)
      expect(stableJson(copy)).toBe(stableJson(structuredClone(value)))
    }
  })
})

describe('cleanObject', () => {
  it('leaves out status and server-set metadata, keeps everything else in its order, __proto__ keys too', () => {
    const obj = JSON.parse(
      '{"kind": "WasmPlugin", "apiVersion": "extensions.istio.io/v1alpha1", "metadata": {"name": "w", "uid": "u", "managedFields": [{"manager": "kubectl"}], "namespace": "a", "resourceVersion": "7", "labels": {}}, "spec": {"pluginConfig": {"__proto__": {"k": "v"}}}, "status": {"x": 1}}',
    ) as KubeObject
    const clean = cleanObject(obj)
    expect(Object.keys(clean)).toEqual(['kind', 'apiVersion', 'metadata', 'spec'])
    expect(clean.metadata).toEqual({name: 'w', namespace: 'a'})
    expect(Object.keys((clean.spec as {pluginConfig: object}).pluginConfig)).toEqual(['__proto__'])
    expect(obj.metadata.managedFields).toEqual([{manager: 'kubectl'}])
  })
})
