// Issue 10 point 17 (last bullet): `status` compares restart-workloads with the pods' proxy state it
// verified. A restart leaves no object to compare; its effect is that the pods run without a sidecar.
// Pods that got their sidecar back are drift, naming the workload and the pods.
import {describe, expect, it} from 'vitest'

import {stepDrift} from '../../src/executor/drift.js'
import type {KubeObject} from '../../src/planner/model.js'
import type {PlanStep} from '../../src/planner/plan-types.js'
import {MemoryKube} from '../support/memory-kube.js'

const NS = 'shop'
const deployment = {apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'cart'}
const restart: PlanStep = {
  id: 'restart-workloads',
  action: 'restart-workloads',
  description: 'restart',
  preconditions: [],
  operations: [{op: 'restart', ref: deployment}],
  verify: [
    {check: 'rollouts-complete', refs: [deployment]},
    {check: 'pods-without-sidecar', refs: [deployment]},
  ],
  undo: {description: 'restart', operations: [{op: 'restart', ref: deployment}]},
}

function pod(name: string, sidecar: boolean): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NS,
      uid: `uid-${name}`,
      ownerReferences: [{apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'cart-1', uid: 'rs1', controller: true}],
      ...(sidecar ? {annotations: {'sidecar.istio.io/status': '{"containers":["istio-proxy"]}'}} : {}),
    },
    spec: {containers: [{name: 'app', image: 'cart'}, ...(sidecar ? [{name: 'istio-proxy', image: 'proxyv2'}] : [])]},
    status: {phase: 'Running'},
  }
}

function cluster(...pods: KubeObject[]): MemoryKube {
  const rs: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: 'cart-1',
      namespace: NS,
      uid: 'rs1',
      ownerReferences: [{apiVersion: 'apps/v1', kind: 'Deployment', name: 'cart', uid: 'd1', controller: true}],
    },
    spec: {},
  }
  const dep: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {name: 'cart', namespace: NS, uid: 'd1'},
    spec: {template: {metadata: {}}},
  }
  return new MemoryKube().seed(dep, rs, ...pods)
}

describe("restart-workloads drift is the pods' proxy state", () => {
  it('in sync while every pod of the restarted workloads runs without a sidecar', async () => {
    expect(await stepDrift(cluster(pod('cart-a', false), pod('cart-b', false)), restart, NS)).toEqual([])
  })

  it('pods with their sidecar back are drift, naming the workload and the pods', async () => {
    expect(await stepDrift(cluster(pod('cart-a', true), pod('cart-b', false)), restart, NS)).toEqual([
      `Deployment ${NS}/cart: 1 of 2 pod(s) run with a sidecar again (the step verified none had one): cart-a`,
    ])
  })
})

describe('enable-ambient drift: pods not captured by ztunnel (issue 19 §8: a readiness blip is not drift)', () => {
  const captured: PlanStep = {
    ...restart,
    id: 'enable-ambient',
    verify: [{check: 'pods-captured', refs: [deployment]}],
  }
  const withRedirection = (p: KubeObject, phase: string, on: boolean): KubeObject => ({
    ...p,
    metadata: {...p.metadata, annotations: on ? {'ambient.istio.io/redirection': 'enabled'} : {}},
    status: {phase},
  })

  it('a Pending pod (a scale-up, its sandbox not set up yet) without redirection is not drift', async () => {
    const kube = cluster(
      withRedirection(pod('cart-a', false), 'Running', true),
      withRedirection(pod('cart-b', false), 'Pending', false),
    )
    expect(await stepDrift(kube, captured, NS)).toEqual([])
  })

  it('a Running pod without redirection is drift', async () => {
    const kube = cluster(
      withRedirection(pod('cart-a', false), 'Running', true),
      withRedirection(pod('cart-b', false), 'Running', false),
    )
    expect(await stepDrift(kube, captured, NS)).toEqual([
      expect.stringContaining(`Deployment ${NS}/cart: 1 of 2 pod(s) are not captured by ztunnel`),
    ])
  })
})
