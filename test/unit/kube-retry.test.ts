// Passing faults are ridden out, permanent ones fail fast (issue 19 §8): which failed requests HttpKubeClient sends
// again (src/kube/errors.ts passingFault), how long it pauses (backoff, the server's Retry-After), and how far a
// retry budget (retryWithin) stretches that. The client runs over a scripted Transport and an injected clock: the
// pauses are counted, never waited.
import {setTimeout as delay} from 'node:timers/promises'

import {afterEach, describe, expect, it} from 'vitest'

import {KubeApiError, KubeConnectionError, passingFault, type Attempt} from '../../src/kube/errors.js'
import {HttpKubeClient, retryWithin, type RetryClock} from '../../src/kube/http-client.js'
import {ConnectTimeoutError, type ResponseLike, type SendInit, type Transport} from '../../src/kube/transport.js'
import {waitUntil} from '../../src/executor/verify.js'

type Answer = {status: number; body?: unknown; headers?: Record<string, string>} | Error

const SERVER = 'https://127.0.0.1:6443'

function connectionError(code: string | undefined, message = `connect ${code} 127.0.0.1:6443`): Error {
  return Object.assign(new Error(message), code ? {code} : {})
}

function response({status, body, headers = {}}: Exclude<Answer, Error>): ResponseLike {
  const map = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  return {
    status,
    headers: {get: (name) => map.get(name.toLowerCase()) ?? null, forEach: (cb) => map.forEach((v, k) => cb(v, k))},
    text: () => Promise.resolve(body === undefined ? '' : JSON.stringify(body)),
  }
}

/** A Transport answering from a script (the last answer repeats), recording what was sent. */
class ScriptedTransport implements Transport {
  readonly context = 'test'
  readonly server = SERVER
  readonly sent: {method: string; path: string}[] = []
  constructor(private readonly answers: Answer[]) {}
  async send(url: string, init: SendInit): Promise<ResponseLike> {
    this.sent.push({method: init.method, path: new URL(url).pathname})
    const answer = this.answers[Math.min(this.sent.length - 1, this.answers.length - 1)]!
    if (answer instanceof Error) throw answer
    return response(answer)
  }
  reload(): Promise<Transport> {
    return Promise.resolve(this)
  }
}

/** A clock whose sleep only records the pause and moves time on; `tick` runs a real zero-delay timer with the signal. */
function testClock(opts: {realTick?: boolean} = {}): RetryClock & {pauses: number[]; t: number} {
  const clock = {
    t: 1_000_000,
    pauses: [] as number[],
    now: () => clock.t,
    sleep: async (ms: number, signal?: AbortSignal) => {
      clock.pauses.push(ms)
      clock.t += ms
      if (opts.realTick) await delay(0, undefined, signal ? {signal} : {})
      signal?.throwIfAborted()
    },
  }
  return clock
}

const DISCOVERY = {
  kind: 'APIGroupDiscoveryList',
  items: [
    {
      metadata: {name: ''},
      versions: [
        {
          version: 'v1',
          resources: [
            {resource: 'configmaps', responseKind: {kind: 'ConfigMap'}, scope: 'Namespaced', verbs: ['get', 'create']},
            {resource: 'services', responseKind: {kind: 'Service'}, scope: 'Namespaced', verbs: ['get', 'list']},
          ],
        },
      ],
    },
  ],
}

const CM = {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'c', namespace: 'shop'}}
const CM_REF = {apiVersion: 'v1', kind: 'ConfigMap', namespace: 'shop', name: 'c'}

/** A client whose discovery is already answered: `answers` are for the request under test. */
async function clientAnswering(answers: Answer[], clock = testClock()) {
  const transport = new ScriptedTransport([{status: 200, body: DISCOVERY}])
  const client = new HttpKubeClient(transport, {clock})
  await client.discover()
  const scripted = new ScriptedTransport(answers)
  ;(client as unknown as {transport: Transport}).transport = scripted
  return {client, transport: scripted, clock}
}

const ok = {status: 200, body: CM}
const status = (code: number, headers?: Record<string, string>): Answer => ({
  status: code,
  body: {kind: 'Status', reason: code === 403 ? 'Forbidden' : 'Failure', message: `HTTP ${code}`, code},
  ...(headers ? {headers} : {}),
})

describe('which failures a read (GET) retries', () => {
  it.each([
    ['ECONNREFUSED (the API server is restarting)', connectionError('ECONNREFUSED')],
    ['ECONNRESET', connectionError('ECONNRESET', 'read ECONNRESET')],
    ['socket hang up (no code)', connectionError(undefined, 'socket hang up')],
    ['EPIPE', connectionError('EPIPE', 'write EPIPE')],
    [
      'node-fetch wrapping ECONNREFUSED',
      Object.assign(new Error('request failed'), {cause: connectionError('ECONNREFUSED')}),
    ],
    ['500', status(500)],
    ['502', status(502)],
    ['503', status(503)],
    ['504', status(504)],
    ['429', status(429)],
  ])('%s: sent again, and succeeds', async (_what, failure) => {
    const {client, transport, clock} = await clientAnswering([failure, ok])
    await expect(client.get(CM_REF)).resolves.toMatchObject({metadata: {name: 'c'}})
    expect(transport.sent).toHaveLength(2)
    expect(clock.pauses).toEqual([200])
  })

  it.each([
    ['403 Forbidden', status(403), KubeApiError],
    ['409 Conflict', status(409), KubeApiError],
    ['422 Invalid', status(422), KubeApiError],
    ['400 Bad Request', status(400), KubeApiError],
    [
      'a TLS verification failure',
      connectionError('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'),
      KubeConnectionError,
    ],
    ['an unknown host name', connectionError('ENOTFOUND', 'getaddrinfo ENOTFOUND kube.invalid'), KubeConnectionError],
    ['a connect timeout', new ConnectTimeoutError('connect', '127.0.0.1:6443', 10_000), KubeConnectionError],
  ])('%s: fails at once, sent once', async (_what, failure, type) => {
    const {client, transport, clock} = await clientAnswering([failure, ok])
    await expect(client.get(CM_REF)).rejects.toBeInstanceOf(type)
    expect(transport.sent).toHaveLength(1)
    expect(clock.pauses).toEqual([])
  })

  it('a 404 is an answer (the object is absent), not retried', async () => {
    const {client, transport} = await clientAnswering([status(404), ok])
    await expect(client.get(CM_REF)).resolves.toBeUndefined()
    expect(transport.sent).toHaveLength(1)
  })

  it('outside a retry budget, gives up after 3 retries with backoff 200, 400, 800 ms', async () => {
    const {client, transport, clock} = await clientAnswering([connectionError('ECONNREFUSED')])
    const error = await client.get(CM_REF).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConnectionError)
    expect((error as Error).message).toContain('get configmaps/c in namespace shop failed: no answer from')
    expect(transport.sent).toHaveLength(4)
    expect(clock.pauses).toEqual([200, 400, 800])
  })
})

describe('writes are sent again only when that cannot do harm', () => {
  it('a create refused before it was sent (ECONNREFUSED) is sent again', async () => {
    const {client, transport} = await clientAnswering([connectionError('ECONNREFUSED'), {status: 201, body: CM}])
    await expect(client.create(CM)).resolves.toMatchObject({metadata: {name: 'c'}})
    expect(transport.sent.map((s) => s.method)).toEqual(['POST', 'POST'])
  })

  it.each([
    ['ECONNRESET (it may have been applied)', connectionError('ECONNRESET', 'socket hang up')],
    ['503 (it may have been applied)', status(503)],
  ])('a create that failed with %s is left to the caller', async (_what, failure) => {
    const {client, transport} = await clientAnswering([failure, {status: 201, body: CM}])
    await expect(client.create(CM)).rejects.toThrow()
    expect(transport.sent).toHaveLength(1)
  })

  it('a create answered 429 was not processed: sent again after the Retry-After the server asked for', async () => {
    const {client, transport, clock} = await clientAnswering([
      status(429, {'Retry-After': '7'}),
      {status: 201, body: CM},
    ])
    await expect(client.create(CM)).resolves.toMatchObject({metadata: {name: 'c'}})
    expect(transport.sent).toHaveLength(2)
    expect(clock.pauses).toEqual([7000])
  })

  it('a Retry-After is honoured up to 30 s, and never shortens the backoff', async () => {
    const {client, clock} = await clientAnswering([
      status(503, {'Retry-After': '120'}),
      status(503, {'Retry-After': '0'}),
      status(429),
      ok,
    ])
    await client.get(CM_REF)
    expect(clock.pauses).toEqual([30_000, 400, 800])
  })

  it('permission checks (SelfSubjectAccessReview) ride out 5xx and dropped connections: they store nothing', async () => {
    const {client, transport} = await clientAnswering([
      status(503),
      connectionError('ECONNRESET', 'socket hang up'),
      {status: 201, body: {status: {allowed: true}}},
    ])
    await expect(client.canI({verb: 'list', group: '', resource: 'services', namespace: 'shop'})).resolves.toEqual({
      allowed: true,
    })
    expect(transport.sent).toHaveLength(3)
  })
})

describe('a retry budget (retryWithin): the wait rides out a restart', () => {
  it('retries past the default 3 until the server answers, telling each retry', async () => {
    const refused = connectionError('ECONNREFUSED')
    const {client, transport, clock} = await clientAnswering([...Array<Answer>(8).fill(refused), ok])
    const told: string[] = []
    const got = await retryWithin({deadline: clock.now() + 60_000, onRetry: (m) => told.push(m)}, () =>
      client.get(CM_REF),
    )
    expect(got?.metadata.name).toBe('c')
    expect(transport.sent).toHaveLength(9)
    expect(clock.pauses).toEqual([200, 400, 800, 1600, 2000, 2000, 2000, 2000])
    expect(told).toHaveLength(8)
    expect(told[0]).toMatch(/^get configmaps\/c in namespace shop: no answer from .*ECONNREFUSED.*; retrying$/)
  })

  it('stops at the deadline with the last failure', async () => {
    const {client, transport, clock} = await clientAnswering([connectionError('ECONNREFUSED')])
    const start = clock.now()
    await expect(retryWithin({deadline: start + 5000}, () => client.get(CM_REF))).rejects.toBeInstanceOf(
      KubeConnectionError,
    )
    // 200 + 400 + 800 + 1600 = 3000 ms; the next pause (2000) would pass the deadline.
    expect(clock.pauses).toEqual([200, 400, 800, 1600])
    expect(transport.sent).toHaveLength(5)
    expect(clock.now() - start).toBeLessThan(5000)
  })

  it('does not start a Retry-After pause that ends past the deadline', async () => {
    const {client, transport, clock} = await clientAnswering([status(429, {'Retry-After': '20'}), ok])
    await expect(retryWithin({deadline: clock.now() + 10_000}, () => client.get(CM_REF))).rejects.toMatchObject({
      status: 429,
    })
    expect(transport.sent).toHaveLength(1)
    expect(clock.pauses).toEqual([])
  })

  it('a 403 inside the budget still fails at once', async () => {
    const {client, transport} = await clientAnswering([status(403), ok])
    await expect(retryWithin({deadline: Date.now() + 600_000}, () => client.get(CM_REF))).rejects.toMatchObject({
      status: 403,
    })
    expect(transport.sent).toHaveLength(1)
  })

  it('Ctrl+C (the signal) ends the retries', async () => {
    const {client, transport, clock} = await clientAnswering(
      [connectionError('ECONNREFUSED')],
      testClock({realTick: true}),
    )
    const controller = new AbortController()
    const pending = retryWithin({deadline: clock.now() + 600_000, signal: controller.signal}, () => client.get(CM_REF))
    await delay(5)
    controller.abort()
    await expect(pending).rejects.toThrow()
    const sent = transport.sent.length
    await delay(5)
    expect(transport.sent).toHaveLength(sent)
  })

  it('applies only inside retryWithin: the same client outside it gives up after 3 retries', async () => {
    const {client, transport, clock} = await clientAnswering([connectionError('ECONNREFUSED')])
    await retryWithin({deadline: clock.now() + 1}, async () => undefined)
    await expect(client.get(CM_REF)).rejects.toBeInstanceOf(KubeConnectionError)
    expect(transport.sent).toHaveLength(4)
  })
})

describe('passingFault', () => {
  const attempt: Attempt = {method: 'GET', verb: 'get', group: '', resource: 'pods', what: 'get pods'}
  const conn = (cause: unknown) => new KubeConnectionError(attempt, SERVER, cause)
  const api = (code: number) => new KubeApiError(code, undefined, attempt, 'test')

  it('classifies by what resending can do', () => {
    expect(passingFault(conn(connectionError('ECONNREFUSED')), false)).toEqual({})
    expect(passingFault(conn(connectionError('ECONNRESET')), true)).toEqual({})
    expect(passingFault(conn(connectionError('ECONNRESET')), false)).toBeUndefined()
    expect(passingFault(conn(Object.assign(new Error('timed out'), {name: 'TimeoutError'})), true)).toEqual({})
    expect(passingFault(conn(connectionError('CERT_HAS_EXPIRED')), true)).toBeUndefined()
    expect(passingFault(api(503), true)).toEqual({})
    expect(passingFault(api(503), false)).toBeUndefined()
    expect(passingFault(api(429), false)).toEqual({})
    for (const code of [400, 401, 403, 404, 409, 410, 422]) expect(passingFault(api(code), true)).toBeUndefined()
    expect(passingFault(new Error('a bug'), true)).toBeUndefined()
  })
})

describe('the wait loop leaks no listeners (MaxListenersExceededWarning)', () => {
  const warnings: Error[] = []
  const onWarning = (w: Error) => warnings.push(w)
  afterEach(() => {
    process.off('warning', onWarning)
  })

  it('polls 300 times on one signal, its reads retried through the signal, with no warning', async () => {
    process.on('warning', onWarning)
    const {client} = await clientAnswering(
      [connectionError('ECONNREFUSED'), {status: 200, body: {...CM, data: {ready: 'no'}}}],
      testClock({realTick: true}),
    )
    const controller = new AbortController()
    let polls = 0
    const result = await waitUntil(
      async () => {
        polls++
        const cm = await client.get(CM_REF)
        return {ok: polls >= 300, detail: `ready=${String((cm?.data as {ready?: string} | undefined)?.ready)}`}
      },
      {timeoutMs: 600_000, intervalMs: 0, signal: controller.signal},
    )
    expect(result.ok).toBe(true)
    expect(polls).toBe(300)
    await delay(10) // warnings are emitted on a later tick
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
  })
})
