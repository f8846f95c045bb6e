// kubectl's kubeconfig names a bearer token in a file `tokenFile` (client-go's clientcmd AuthInfo, field
// `tokenFile`, resolved relative to the kubeconfig); @kubernetes/client-node 1.4 only reads a `token-file`
// key, so without our loader a standard kubeconfig made the tool act as system:anonymous.
import {mkdir, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {stringify} from 'yaml'
import {describe, expect, it} from 'vitest'

import {loadKubeConfig} from '../../src/kube/config.js'
import {KubeConfigError} from '../../src/kube/errors.js'

async function kubeconfigWith(user: Record<string, unknown>): Promise<{dir: string; file: string}> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mesh-migrate-kubeconfig-'))
  const file = path.join(dir, 'config')
  await writeFile(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{name: 'c', cluster: {server: 'https://127.0.0.1:6443'}}],
      users: [{name: 'u', user}],
      contexts: [{name: 'ctx', context: {cluster: 'c', user: 'u'}}],
      'current-context': 'ctx',
    }),
  )
  return {dir, file}
}

describe('kubeconfig tokenFile (kubectl key)', () => {
  it('reads the token from the file, relative to the kubeconfig', async () => {
    const {dir, file} = await kubeconfigWith({tokenFile: 'secrets/token'})
    await mkdir(path.join(dir, 'secrets'))
    await writeFile(path.join(dir, 'secrets', 'token'), 'file-token\n')
    const kc = await loadKubeConfig({kubeconfig: file}, {})
    expect(kc.getCurrentUser()?.token).toBe('file-token')
  })

  it('an inline token wins over tokenFile, as in kubectl', async () => {
    const {file} = await kubeconfigWith({token: 'inline', tokenFile: '/nonexistent'})
    const kc = await loadKubeConfig({kubeconfig: file}, {})
    expect(kc.getCurrentUser()?.token).toBe('inline')
  })

  it('a missing token file is a clear error naming the user and the path', async () => {
    const {dir, file} = await kubeconfigWith({tokenFile: 'missing'})
    const error = await loadKubeConfig({kubeconfig: file}, {}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(KubeConfigError)
    expect((error as Error).message).toContain('token file of user "u"')
    expect((error as KubeConfigError).suggestion).toContain(path.join(dir, 'missing'))
  })
})
