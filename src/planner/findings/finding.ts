// Builds every finding and preflight diagnostic from the catalogue (issue 23 §3): the emission site names
// the code, the object and the values of the template's `{arg}`s; severity, message and fix come from
// catalogue.ts. The arguments are typed per code from the templates themselves (a missing or misspelled
// argument, an unknown code, a severity the catalogue does not list, or a variant it does not have fails tsc).
import type {Finding, ObjectRef} from '../model.js'
import {
  type CatalogueEntry,
  type CatalogueSeverity,
  FINDING_CATALOGUE,
  type FindingCode,
  type FindingText,
  type Severity,
} from './catalogue.js'

/** The `{name}` placeholders of a template literal type (braces around other text, e.g. YAML flow maps, are text). */
type Placeholders<T> = T extends `${string}{${infer P}}${infer Rest}`
  ? (P extends `${string}${' ' | ':' | '<' | '{'}${string}` ? never : P) | Placeholders<Rest>
  : never

/** What fills a placeholder: lists are joined with ", ". */
export type FindingArg = string | number | readonly (string | number)[]

type TextArgs<T> = {
  readonly [
    K in Placeholders<T extends {message: infer M} ? M : never> | Placeholders<T extends {fix: infer F} ? F : never>
  ]: FindingArg
}

/** The arguments of code C: its template's placeholders, plus `variant` when the code has several wordings. */
export type FindingArgs<C extends FindingCode> =
  CatalogueEntry<C> extends {variants: infer V}
    ? {[K in keyof V]: {readonly variant: K} & TextArgs<V[K]>}[keyof V]
    : TextArgs<CatalogueEntry<C>>

/** The severity of code C: optional when the catalogue lists one, required (and one of them) otherwise. */
type SeverityOf<C extends FindingCode, S extends CatalogueSeverity> = CatalogueEntry<C>['severity'] extends readonly [
  unknown,
]
  ? {severity?: Extract<CatalogueEntry<C>['severity'][number], S>}
  : {severity: Extract<CatalogueEntry<C>['severity'][number], S>}

export interface RenderedFinding<S extends CatalogueSeverity = CatalogueSeverity> {
  code: FindingCode
  severity: S
  message: string
  fix?: string
}

function fill(template: string, code: FindingCode, args: Readonly<Record<string, FindingArg>>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = args[name]
    if (value === undefined) throw new Error(`finding ${code}: no value for {${name}}`)
    return typeof value === 'object' ? value.join(', ') : String(value)
  })
}

function textOf(code: FindingCode, variant: unknown): FindingText {
  const spec = FINDING_CATALOGUE[code]
  const text = variant === undefined ? spec : spec.variants?.[String(variant)]
  if (!text?.message)
    throw new Error(`finding ${code}: no wording${variant === undefined ? '' : ` "${String(variant)}"`}`)
  return text as FindingText
}

/** Severity, message and fix of code C from the catalogue (what preflight diagnostics and findings share). */
export function renderFinding<C extends FindingCode, S extends CatalogueSeverity = CatalogueSeverity>(
  code: C,
  args: FindingArgs<C>,
  severity?: S,
): RenderedFinding<S> {
  const spec = FINDING_CATALOGUE[code]
  const chosen = (severity ?? spec.severity[0]) as S
  if (!spec.severity.includes(chosen)) throw new Error(`finding ${code}: severity ${chosen} is not catalogued`)
  const values = args as Readonly<Record<string, FindingArg>>
  const text = textOf(code, values.variant)
  return {
    code,
    severity: chosen,
    message: fill(text.message, code, values),
    ...(text.fix === undefined ? {} : {fix: fill(text.fix, code, values)}),
  }
}

/**
 * The finding of code C about `ref` (absent for namespace-wide ones). `at.id` is the finding's stable id (what
 * --accept-lost / --accept-hazard name); `at.severity` is one of the catalogue's severities for C.
 */
export function finding<C extends FindingCode>(
  code: C,
  ref: ObjectRef | undefined,
  args: FindingArgs<C>,
  at: {id: string} & SeverityOf<C, Severity>,
): Finding {
  const {severity, message, fix} = renderFinding<C, Severity>(code, args, at.severity)
  return {id: at.id, code, severity, message, ...(ref ? {ref} : {}), ...(fix === undefined ? {} : {fix})}
}
