// v1.Status error bodies and field errors, formatted the way kube-apiserver formats them
// (k8s.io/apimachinery/pkg/api/errors and pkg/util/validation/field). Tests compare these
// strings against what a real 1.32 server says, so the wording is deliberate.

export interface StatusCause {
  reason?: string
  message?: string
  field?: string
}

export interface StatusDetails {
  name?: string
  group?: string
  kind?: string
  uid?: string
  causes?: StatusCause[]
  retryAfterSeconds?: number
}

export interface V1Status {
  kind: 'Status'
  apiVersion: 'v1'
  metadata: Record<string, unknown>
  status: 'Success' | 'Failure'
  message?: string
  reason?: string
  details?: StatusDetails
  code: number
}

/** An error that the HTTP layer turns into a v1.Status response. */
export class ApiError extends Error {
  readonly status: V1Status
  /** Extra response headers (e.g. Retry-After). */
  readonly headers: Record<string, string>
  constructor(
    status: Omit<V1Status, 'kind' | 'apiVersion' | 'metadata' | 'status'>,
    headers: Record<string, string> = {},
  ) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`)
    this.status = {kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', ...stripUndefined(status)}
    this.headers = headers
  }
  get code(): number {
    return this.status.code
  }
}

function stripUndefined<T extends object>(o: T): T {
  const out: any = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v
  return out
}

/** `group/resource` as qualifiedResource.String() prints it: "deployments.apps", "pods". */
export function qualifiedResource(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource
}

/** `Kind.group` as GroupKind.String() prints it: "Deployment.apps", "Pod". */
export function qualifiedKind(group: string, kind: string): string {
  return group ? `${kind}.${group}` : kind
}

function details(
  group: string,
  resource: string,
  name: string | undefined,
  extra: Partial<StatusDetails> = {},
): StatusDetails {
  const d: StatusDetails = {}
  if (name) d.name = name
  if (group) d.group = group
  if (resource) d.kind = resource // the real server puts the resource (plural) into details.kind
  return {...d, ...extra}
}

export function notFound(group: string, resource: string, name: string): ApiError {
  return new ApiError({
    message: `${qualifiedResource(group, resource)} "${name}" not found`,
    reason: 'NotFound',
    details: details(group, resource, name),
    code: 404,
  })
}

/** The body of a 404 for a path that names no known resource (unknown group, version or resource). */
export function resourceNotFound(): ApiError {
  return new ApiError({
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  })
}

export function alreadyExists(group: string, resource: string, name: string): ApiError {
  return new ApiError({
    message: `${qualifiedResource(group, resource)} "${name}" already exists`,
    reason: 'AlreadyExists',
    details: details(group, resource, name),
    code: 409,
  })
}

export function conflict(group: string, resource: string, name: string, why: string): ApiError {
  return new ApiError({
    message: `Operation cannot be fulfilled on ${qualifiedResource(group, resource)} "${name}": ${why}`,
    reason: 'Conflict',
    details: details(group, resource, name),
    code: 409,
  })
}

export const OBJECT_MODIFIED =
  'the object has been modified; please apply your changes to the latest version and try again'

export function badRequest(message: string): ApiError {
  return new ApiError({message, reason: 'BadRequest', code: 400})
}

export function forbidden(group: string, resource: string, name: string, why: string): ApiError {
  let message: string
  if (!resource) message = `forbidden: ${why}`
  else if (!name) message = `${qualifiedResource(group, resource)} is forbidden: ${why}`
  else message = `${qualifiedResource(group, resource)} "${name}" is forbidden: ${why}`
  return new ApiError({message, reason: 'Forbidden', details: details(group, resource, name), code: 403})
}

export function unauthorized(): ApiError {
  return new ApiError({message: 'Unauthorized', reason: 'Unauthorized', code: 401})
}

export function methodNotAllowed(): ApiError {
  return new ApiError({
    message: 'the server does not allow this method on the requested resource',
    reason: 'MethodNotAllowed',
    details: {causes: [{reason: 'UnexpectedServerResponse', message: '405: Method Not Allowed'}]},
    code: 405,
  })
}

export function unsupportedMediaType(accepted: string[]): ApiError {
  return new ApiError({
    message: `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
    reason: 'UnsupportedMediaType',
    code: 415,
  })
}

/** NewGenericServerResponse(422, ...): what a failed JSON-patch operation returns. */
export function unprocessable(serverMessage: string): ApiError {
  return new ApiError({
    message: 'the server rejected our request due to an error in our request',
    reason: 'Invalid',
    details: {causes: [{reason: 'UnexpectedServerResponse', message: serverMessage}]},
    code: 422,
  })
}

export function gone(message: string): ApiError {
  return new ApiError({message, reason: 'Expired', code: 410})
}

export function tooLargeResourceVersion(requested: number, current: number): ApiError {
  return new ApiError(
    {
      message: `Too large resource version: ${requested}, current: ${current}`,
      reason: 'Timeout',
      details: {
        causes: [{reason: 'ResourceVersionTooLarge', message: 'Too large resource version'}],
        retryAfterSeconds: 1,
      },
      code: 504,
    },
    {'Retry-After': '1'},
  )
}

export function internalError(message: string): ApiError {
  return new ApiError({
    message: `Internal error occurred: ${message}`,
    reason: 'InternalError',
    details: {causes: [{message}]},
    code: 500,
  })
}

/** Fault injection: a status of the caller's choosing with the body the real server would use for it. */
export function statusForCode(code: number, message?: string, retryAfterSeconds?: number): ApiError {
  const reasons: Record<number, [string, string]> = {
    400: ['BadRequest', 'the server rejected our request for an unknown reason'],
    401: ['Unauthorized', 'Unauthorized'],
    403: ['Forbidden', 'forbidden'],
    404: ['NotFound', 'the server could not find the requested resource'],
    405: ['MethodNotAllowed', 'the server does not allow this method on the requested resource'],
    409: ['Conflict', 'the server reported a conflict'],
    410: ['Expired', 'the resource version is too old'],
    415: ['UnsupportedMediaType', 'the server does not support the media type'],
    422: ['Invalid', 'the server rejected our request due to an error in our request'],
    429: ['TooManyRequests', 'the server has received too many requests and has asked us to try again later'],
    500: ['InternalError', 'an error on the server ("") has prevented the request from succeeding'],
    503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
    504: [
      'Timeout',
      'the server was unable to return a response in the time allotted, but may still be processing the request',
    ],
  }
  const [reason, defaultMessage] = reasons[code] ?? [
    'Unknown',
    `the server responded with the status code ${code} but did not return more information`,
  ]
  const headers: Record<string, string> = {}
  const det: StatusDetails = {}
  if (retryAfterSeconds !== undefined) {
    headers['Retry-After'] = String(retryAfterSeconds)
    det.retryAfterSeconds = retryAfterSeconds
  } else if (code === 429) {
    headers['Retry-After'] = '1'
    det.retryAfterSeconds = 1
  }
  return new ApiError({message: message ?? defaultMessage, reason, details: det, code}, headers)
}

// ---------------------------------------------------------------------------------------
// Field errors (k8s.io/apimachinery/pkg/util/validation/field)

export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'InternalError'
  | 'FieldValueTypeInvalid'

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
  FieldValueTypeInvalid: 'Invalid value',
}

/** Marks a field error whose value is not printed (TooMany with an unknown count). */
export const OMIT_VALUE = Symbol('omit')

export interface FieldError {
  type: FieldErrorType
  /** Path as field.Path.String() prints it; "<nil>" for errors without a path. */
  field: string
  value: unknown
  detail: string
}

/** A bad value printed verbatim (Go's fmt.Stringer branch of field.Error). */
export class GoLiteral {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
  toJSON(): string {
    return this.text
  }
}

/** Go's %v / %q / %#v of a decoded JSON value, as field.Error.ErrorBody prints the bad value. */
export function goValue(value: unknown): string {
  if (value === null || value === undefined) return '"null"'
  if (value instanceof GoLiteral) return value.text
  if (typeof value === 'string') return goQuote(value)
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value)
  return goSharpV(value)
}

export function goQuote(s: string): string {
  return JSON.stringify(s)
}

function goSharpV(value: unknown): string {
  if (value === null || value === undefined) return 'interface {}(nil)'
  if (typeof value === 'string') return goQuote(value)
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value)
  if (Array.isArray(value)) return `[]interface {}{${value.map(goSharpV).join(', ')}}`
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `map[string]interface {}{${entries.map(([k, v]) => `${goQuote(k)}:${goSharpV(v)}`).join(', ')}}`
}

export function errorBody(e: FieldError): string {
  let s: string
  if (
    e.type === 'FieldValueRequired' ||
    e.type === 'FieldValueForbidden' ||
    e.type === 'FieldValueTooLong' ||
    e.type === 'InternalError' ||
    e.value === OMIT_VALUE
  ) {
    s = TYPE_TEXT[e.type]
  } else {
    s = `${TYPE_TEXT[e.type]}: ${goValue(e.value)}`
  }
  if (e.detail) s += `: ${e.detail}`
  return s
}

export function fieldErrorString(e: FieldError): string {
  return `${e.field}: ${errorBody(e)}`
}

export const fieldError = {
  required: (field: string, detail = ''): FieldError => ({type: 'FieldValueRequired', field, value: '', detail}),
  invalid: (field: string, value: unknown, detail: string): FieldError => ({
    type: 'FieldValueInvalid',
    field,
    value,
    detail,
  }),
  typeInvalid: (field: string, value: unknown, detail: string): FieldError => ({
    type: 'FieldValueTypeInvalid',
    field,
    value,
    detail,
  }),
  notSupported: (field: string, value: unknown, valid: string[]): FieldError => ({
    type: 'FieldValueNotSupported',
    field,
    value,
    detail: valid.length ? `supported values: ${valid.map(goQuote).join(', ')}` : '',
  }),
  forbidden: (field: string, detail: string): FieldError => ({type: 'FieldValueForbidden', field, value: '', detail}),
  duplicate: (field: string, value: unknown): FieldError => ({type: 'FieldValueDuplicate', field, value, detail: ''}),
  tooLong: (field: string, maxLength: number): FieldError => ({
    type: 'FieldValueTooLong',
    field,
    value: '<value omitted>',
    detail:
      maxLength >= 0 ? `may not be more than ${maxLength} ${maxLength === 1 ? 'byte' : 'bytes'}` : 'value is too long',
  }),
  tooMany: (field: string, actual: number, max: number): FieldError => ({
    type: 'FieldValueTooMany',
    field,
    value: actual >= 0 ? actual : OMIT_VALUE,
    detail: max >= 0 ? `must have at most ${max} items` : 'has too many items',
  }),
  internal: (field: string, message: string): FieldError => ({
    type: 'InternalError',
    field,
    value: null,
    detail: message,
  }),
}

/** utilerrors.NewAggregate(...).Error(): one message, or "[a, b]" with duplicates removed. */
export function aggregate(messages: string[]): string {
  const seen: string[] = []
  for (const m of messages) if (!seen.includes(m)) seen.push(m)
  if (seen.length === 1) return seen[0]!
  return `[${seen.join(', ')}]`
}

/** apierrors.NewInvalid(qualifiedKind, name, errs) → 422. */
export function invalid(group: string, kind: string, name: string, errs: FieldError[]): ApiError {
  const causes = errs.map((e) => ({reason: e.type, message: errorBody(e), field: e.field}))
  const agg = aggregate(errs.map(fieldErrorString))
  const message =
    errs.length === 0
      ? `${qualifiedKind(group, kind)} "${name}" is invalid`
      : `${qualifiedKind(group, kind)} "${name}" is invalid: ${agg}`
  const d: StatusDetails = {}
  if (name) d.name = name
  if (group) d.group = group
  d.kind = kind
  d.causes = causes
  return new ApiError({message, reason: 'Invalid', details: d, code: 422})
}

/** Field path helpers (field.Path). */
export function childPath(parent: string, name: string): string {
  return parent ? `${parent}.${name}` : name
}
export function indexPath(parent: string, i: number): string {
  return `${parent}[${i}]`
}
export function keyPath(parent: string, key: string): string {
  return `${parent}[${key}]`
}
