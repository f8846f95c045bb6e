// A `Next:` repeats the command the user typed, with their flags (issue 19 §7): `--all --yes` dropped from a
// suggestion made it exit 2 in CI where the original command worked.
import {afterEach, describe, expect, it} from 'vitest'

import {clearInvocation, recordInvocation, sameCommand, shellWord} from '../../src/invocation.js'

describe('sameCommand', () => {
  afterEach(() => clearInvocation())

  it('without a recorded command line: the fallback, with the flags to add', () => {
    expect(sameCommand('apply', 'mesh-migrate apply plans/x.yaml', {add: ['--retry']})).toBe(
      'mesh-migrate apply plans/x.yaml --retry',
    )
  })

  it('repeats the typed flags and adds what is missing, once', () => {
    recordInvocation('mesh-migrate', ['apply', 'shop', '--all', '--yes', '--timeout', '90s'])
    expect(sameCommand('apply', 'mesh-migrate apply plans/shop.yaml', {add: ['--retry']})).toBe(
      'mesh-migrate apply shop --all --yes --timeout 90s --retry',
    )
    recordInvocation('mesh-migrate', ['apply', 'shop', '--retry', '--yes'])
    expect(sameCommand('apply', 'x', {add: ['--retry']})).toBe('mesh-migrate apply shop --retry --yes')
  })

  it('another command than the one asked for: the fallback', () => {
    recordInvocation('mesh-migrate', ['plan', 'shop', '--keep-progress'])
    expect(sameCommand('apply', 'mesh-migrate apply plans/shop.yaml', {add: ['--retry']})).toBe(
      'mesh-migrate apply plans/shop.yaml --retry',
    )
  })

  it('drops flags (boolean, with a separate value, or with =value)', () => {
    recordInvocation('mesh-migrate', ['apply', '--fleet', '--wave', '2', '--to-wave=3', '--all', '--yes'])
    expect(sameCommand('apply', 'x', {drop: ['--all'], dropWithValue: ['--wave', '--to-wave']})).toBe(
      'mesh-migrate apply --fleet --yes',
    )
  })

  it('quotes what a shell would interpret', () => {
    expect(shellWord('plans/a b.yaml')).toBe(`'plans/a b.yaml'`)
    expect(shellWord("it's")).toBe(`'it'\\''s'`)
    expect(shellWord('--timeout=2m')).toBe('--timeout=2m')
    recordInvocation('mesh-migrate', ['apply', 'plans/my plan.yaml', '--yes'])
    expect(sameCommand('apply', 'x')).toBe(`mesh-migrate apply 'plans/my plan.yaml' --yes`)
  })
})
