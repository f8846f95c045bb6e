// Name, label and annotation rules of k8s.io/apimachinery/pkg/util/validation and
// apimachinery/pkg/api/validation, with the real messages (including their double spaces).
import {childPath, fieldError, type FieldError} from '../errors.js'

const DNS1123_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?'
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`
const DNS1035_LABEL = '[a-z]([-a-z0-9]*[a-z0-9])?'
const QUALIFIED_NAME = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'
const LABEL_VALUE = `(${QUALIFIED_NAME})?`

const full = (re: string) => new RegExp(`^${re}$`)
const dns1123LabelRe = full(DNS1123_LABEL)
const dns1123SubdomainRe = full(DNS1123_SUBDOMAIN)
const dns1035LabelRe = full(DNS1035_LABEL)
const qualifiedNameRe = full(QUALIFIED_NAME)
const labelValueRe = full(LABEL_VALUE)

function regexError(msg: string, fmt: string, ...examples: string[]): string {
  let s = `${msg} (`
  if (examples.length > 0) {
    s += 'e.g. '
    s += examples.map((e) => `'${e}'`).join(',  or ')
    s += ', '
  }
  return `${s}regex used for validation is '${fmt}')`
}

function maxLenError(n: number): string {
  return `must be no more than ${n} characters`
}

export function isDNS1123Label(value: string): string[] {
  const errs: string[] = []
  if (value.length > 63) errs.push(maxLenError(63))
  if (!dns1123LabelRe.test(value))
    errs.push(
      regexError(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        DNS1123_LABEL,
        'my-name',
        '123-abc',
      ),
    )
  return errs
}

export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = []
  if (value.length > 253) errs.push(maxLenError(253))
  if (!dns1123SubdomainRe.test(value))
    errs.push(
      regexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        DNS1123_SUBDOMAIN,
        'example.com',
      ),
    )
  return errs
}

export function isDNS1035Label(value: string): string[] {
  const errs: string[] = []
  if (value.length > 63) errs.push(maxLenError(63))
  if (!dns1035LabelRe.test(value))
    errs.push(
      regexError(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
        DNS1035_LABEL,
        'my-name',
        'abc-123',
      ),
    )
  return errs
}

/** Rules for metadata.name per kind (ValidateObjectMeta's nameFn). */
export type NameRule = 'dns1123-subdomain' | 'dns1123-label' | 'dns1035-label' | 'path-segment'

export function validateNameByRule(rule: NameRule, name: string): string[] {
  switch (rule) {
    case 'dns1123-label':
      return isDNS1123Label(name)
    case 'dns1035-label':
      return isDNS1035Label(name)
    case 'path-segment':
      return validatePathSegmentName(name)
    default:
      return isDNS1123Subdomain(name)
  }
}

export function validatePathSegmentName(name: string): string[] {
  if (name === '.' || name === '..') return [`may not be '${name}'`]
  const errs: string[] = []
  for (const bad of ['/', '%']) if (name.includes(bad)) errs.push(`may not contain '${bad}'`)
  return errs
}

/** IsQualifiedName: label and annotation keys. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = []
  const parts = value.split('/')
  let name: string
  if (parts.length === 1) {
    name = parts[0]!
  } else if (parts.length === 2) {
    const prefix = parts[0]!
    name = parts[1]!
    if (prefix.length === 0) errs.push('prefix part must be non-empty')
    else for (const m of isDNS1123Subdomain(prefix)) errs.push(`prefix part ${m}`)
  } else {
    return [
      'a qualified name ' +
        regexError(
          "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
          QUALIFIED_NAME,
          'MyName',
          'my.name',
          '123-abc',
        ) +
        " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]
  }
  if (name.length === 0) errs.push('name part must be non-empty')
  else if (name.length > 63) errs.push(`name part ${maxLenError(63)}`)
  if (!qualifiedNameRe.test(name))
    errs.push(
      'name part ' +
        regexError(
          "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
          QUALIFIED_NAME,
          'MyName',
          'my.name',
          '123-abc',
        ),
    )
  return errs
}

export function isValidLabelValue(value: string): string[] {
  const errs: string[] = []
  if (value.length > 63) errs.push(maxLenError(63))
  if (!labelValueRe.test(value))
    errs.push(
      regexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        LABEL_VALUE,
        'MyValue',
        'my_value',
        '12345',
      ),
    )
  return errs
}

const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

export function validateLabels(labels: unknown, path: string): FieldError[] {
  const errs: FieldError[] = []
  if (labels === undefined || labels === null) return errs
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    for (const m of isQualifiedName(k)) errs.push(fieldError.invalid(path, k, m))
    if (typeof v === 'string') for (const m of isValidLabelValue(v)) errs.push(fieldError.invalid(path, v, m))
  }
  return errs
}

export function validateAnnotations(annotations: unknown, path: string): FieldError[] {
  const errs: FieldError[] = []
  if (annotations === undefined || annotations === null) return errs
  let total = 0
  for (const [k, v] of Object.entries(annotations as Record<string, unknown>)) {
    for (const m of isQualifiedName(k.toLowerCase())) errs.push(fieldError.invalid(path, k, m))
    total += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0)
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(fieldError.tooLong(path, TOTAL_ANNOTATION_SIZE_LIMIT))
  return errs
}

/**
 * ValidateObjectMeta for a create or update: name (or generateName), namespace presence,
 * labels, annotations, finalizers. `namespaced` says whether metadata.namespace must be set.
 */
export function validateObjectMeta(meta: any, namespaced: boolean, rule: NameRule): FieldError[] {
  const errs: FieldError[] = []
  const path = 'metadata'
  if (!meta?.name) {
    if (!meta?.generateName) errs.push(fieldError.required(childPath(path, 'name'), 'name or generateName is required'))
  } else {
    for (const m of validateNameByRule(rule, meta.name))
      errs.push(fieldError.invalid(childPath(path, 'name'), meta.name, m))
  }
  if (namespaced) {
    if (!meta?.namespace) errs.push(fieldError.required(childPath(path, 'namespace'), ''))
    else
      for (const m of isDNS1123Label(meta.namespace))
        errs.push(fieldError.invalid(childPath(path, 'namespace'), meta.namespace, m))
  } else if (meta?.namespace) {
    errs.push(fieldError.forbidden(childPath(path, 'namespace'), 'not allowed on this type'))
  }
  errs.push(...validateLabels(meta?.labels, childPath(path, 'labels')))
  errs.push(...validateAnnotations(meta?.annotations, childPath(path, 'annotations')))
  if (Array.isArray(meta?.finalizers)) {
    meta.finalizers.forEach((f: unknown, i: number) => {
      if (typeof f !== 'string') return
      for (const m of isQualifiedName(f)) errs.push(fieldError.invalid(`${path}.finalizers[${i}]`, f, m))
    })
  }
  return errs
}

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789'

/** names.SimpleNameGenerator: base (cut to 58 chars) + 5 random characters. */
export function generateName(base: string): string {
  const maxBase = 63 - 5
  let s = base.length > maxBase ? base.slice(0, maxBase) : base
  for (let i = 0; i < 5; i++) s += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)]
  return s
}
