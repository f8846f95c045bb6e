// The pieces of validation that translate Go/Kubernetes semantics to JavaScript: RE2
// patterns and the Kubernetes CEL libraries on cel-js.
import {describe, expect, it} from 'vitest'
import {compileRule} from '../support/apiserver/validation/cel.js'
import {re2Test} from '../support/apiserver/validation/re2.js'

const evaluate = (rule: string, self: unknown = null) => {
  const c = compileRule({rule})
  if (c.skipped) throw new Error(`skipped: ${c.skipped}`)
  return c.program!({self, oldSelf: null})
}

describe('RE2 patterns', () => {
  it.each([
    ['^(?i)abc$', 'ABC', true],
    ['^(?i)\\.?[a-z_][a-z_0-9]*(\\.[a-z_][a-z_0-9]*)*$', 'Foo.Bar_1', true],
    ['^a(?i:b)c$', 'aBc', true],
    ['^a(?i:b)c$', 'aBC', false],
    ['^[[:alpha:]]+\\z', 'abcXYZ', true],
    ['^[[:digit:]]+$', '12a', false],
    ['^\\Qa.b\\E$', 'a.b', true],
    ['^\\Qa.b\\E$', 'axb', false],
    ['^(?P<word>\\w+)$', 'hello', true],
    ['\\@', 'a@b', true],
    ['^\\pL+$', 'héllo', true],
  ])('%s on %s is %s', (pattern, value, expected) => {
    expect(re2Test(pattern, value)).toBe(expected)
  })
})

describe('Kubernetes CEL libraries on cel-js', () => {
  it('regex: matches (RE2 syntax), find, findAll', () => {
    expect(evaluate('"ABC".matches("^(?i)abc$")')).toBe(true)
    expect(evaluate('matches("abc", "^a")')).toBe(true)
    expect(evaluate('"abc 123 def 456".find("[0-9]+")')).toBe('123')
    expect(evaluate('"abc 123 def 456".findAll("[0-9]+")')).toEqual(['123', '456'])
    expect(evaluate('"abc 123 def 456".findAll("[0-9]+", 1)')).toEqual(['123'])
  })

  it('lists: isSorted, sum, min, max, indexOf, lastIndexOf', () => {
    expect(evaluate('[1, 2, 3].isSorted() && ![2, 1].isSorted()')).toBe(true)
    expect(evaluate('[1, 2, 3].sum()')).toBe(6n)
    expect(evaluate('[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3')).toBe(true)
    expect(evaluate('[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2')).toBe(true)
  })

  it('strings: charAt, replace, split, lowerAscii, format, quote', () => {
    expect(evaluate('"hello".charAt(1)')).toBe('e')
    expect(evaluate('"a-b-c".replace("-", "+", 1)')).toBe('a+b-c')
    expect(evaluate('"a/b".split("/")[0]')).toBe('a')
    expect(evaluate('"ABC".lowerAscii()')).toBe('abc')
    expect(evaluate('"%s has %d items".format(["list", 3])')).toBe('list has 3 items')
    expect(evaluate('strings.quote("a\\"b")')).toBe('"a\\"b"')
  })

  it('urls follow Go net/url: ParseRequestURI to accept, Parse to split', () => {
    expect(evaluate('isURL("https://example.com:8443/a/b?x=1&x=2")')).toBe(true)
    expect(evaluate('isURL("example.com/path")')).toBe(false)
    expect(evaluate('isURL("/absolute/path")')).toBe(true)
    expect(evaluate('isURL("#%blah$#@")')).toBe(false)
    expect(evaluate('url("https://example.com:8443/a").getHostname()')).toBe('example.com')
    expect(evaluate('url("https://example.com:8443/a").getPort()')).toBe('8443')
    expect(evaluate('url("https://[::1]:80/").getHostname()')).toBe('::1')
    expect(evaluate('url("https://x/?a=1&a=2&b=3").getQuery()')).toEqual({a: ['1', '2'], b: ['3']})
    expect(evaluate('url("oci://registry/image:tag").getScheme()')).toBe('oci')
  })

  it('ip and cidr follow net/netip and the Kubernetes restrictions', () => {
    expect(evaluate('isIP("10.0.0.1") && isIP("2001:db8::1")')).toBe(true)
    expect(evaluate('isIP("10.0.0.01")')).toBe(false)
    expect(evaluate('isIP("::ffff:10.0.0.1")')).toBe(false)
    expect(evaluate('isIP("fe80::1%eth0")')).toBe(false)
    expect(evaluate('ip("2001:db8::1").family()')).toBe(6n)
    expect(
      evaluate(
        'ip("127.0.0.1").isLoopback() && ip("169.254.1.1").isLinkLocalUnicast() && ip("8.8.8.8").isGlobalUnicast()',
      ),
    ).toBe(true)
    expect(evaluate('ip.isCanonical("2001:db8::1") && !ip.isCanonical("2001:DB8::1")')).toBe(true)
    expect(
      evaluate('cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16") && !cidr("10.0.0.0/16").containsIP("10.1.0.1")'),
    ).toBe(true)
    expect(
      evaluate('string(cidr("10.1.2.3/8").masked()) == "10.0.0.0/8" && cidr("10.1.2.3/8").prefixLength() == 8'),
    ).toBe(true)
  })

  it('quantities compare exactly across suffixes', () => {
    expect(evaluate('quantity("1Gi").isGreaterThan(quantity("1G"))')).toBe(true)
    expect(evaluate('quantity("1500m").compareTo(quantity("1.5")) == 0')).toBe(true)
    expect(evaluate('quantity("2k").asInteger() == 2000 && !quantity("1.5").isInteger()')).toBe(true)
    expect(evaluate('isQuantity("10Mi") && !isQuantity("ten")')).toBe(true)
    expect(evaluate('quantity("1k").add(24).asInteger()')).toBe(1024n)
  })

  it('format and sets', () => {
    expect(evaluate('format.dns1123Label().validate("ok-name").hasValue()')).toBe(false)
    expect(evaluate('format.named("dns1123Subdomain").value().validate("Not OK").hasValue()')).toBe(true)
    expect(
      evaluate('sets.contains([1, 2, 3], [2]) && sets.intersects([1], [1, 5]) && sets.equivalent([1, 2], [2, 1])'),
    ).toBe(true)
  })

  it('has() on computed operands, as cel-go allows', () => {
    expect(evaluate('has(self[0].a) && !has(self[1].a)', [{a: 1}, {}])).toBe(true)
  })
})
