// JSON Schemas of the plan (draft-07, checked with ajv). Unknown fields are errors everywhere the
// tool owns the shape; embedded Kubernetes objects are free-form here and checked by the safety rules.
// Three forms of one shape: the expanded plan (mesh-migrate.io/v1alpha1: JSON outputs, and plan files written
// before v1alpha2), the plan file (mesh-migrate.io/v1alpha3, src/plan/plan-encoding.ts), where references are
// one-line strings, objects are stored once in spec.objects and neighbouring inventory items and hazards that share
// their verdict (kind) are one entry, and the earlier plan file, v1alpha2, with repeated texts in spec.texts.
import {STEP_ACTIONS} from './plan-types.js'

const refObject = {
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind', 'name'],
  properties: {
    apiVersion: {type: 'string', minLength: 1},
    kind: {type: 'string', minLength: 1},
    namespace: {type: 'string'},
    name: {type: 'string', minLength: 1},
  },
}

/** `[apiVersion] Kind namespace/name`, or `[apiVersion] Kind name` for a cluster-scoped object (plan-encoding.ts). */
const refText = {type: 'string', pattern: '^(\\S+ )?[^\\s/]+ ([^\\s/]+/)?[^\\s/]+$'}

const textReference = {
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  // `prefix`: the text's own beginning, before a tail it shares with other texts.
  properties: {prefix: {type: 'string'}, text: {type: 'string', pattern: '^[0-9a-f]{8,}$'}},
}

const kubeObject = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata'],
  properties: {
    apiVersion: {type: 'string', minLength: 1},
    kind: {type: 'string', minLength: 1},
    metadata: {
      type: 'object',
      required: ['name'],
      properties: {
        name: {type: 'string', minLength: 1},
        namespace: {type: 'string'},
        labels: {type: 'object', additionalProperties: {type: 'string'}},
        annotations: {type: 'object', additionalProperties: {type: 'string'}},
      },
    },
  },
}

type Form = 'expanded' | 'file' | 'file-v1alpha2'

const labelMap = {type: 'object', additionalProperties: {type: ['string', 'null']}}

const stepActionRef = {enum: [...STEP_ACTIONS]}

const policyTimelineInput = {
  type: 'object',
  additionalProperties: false,
  required: ['key', 'workloads'],
  properties: {
    key: {type: 'string'},
    action: {type: 'string'},
    ztunnel: {enum: ['as-written', 'deny-all', 'narrowed', 'broadened', 'no-op', 'ignored']},
    workloads: {type: 'array', items: {type: 'string'}},
    deletedIn: stepActionRef,
    waypointCopyIn: stepActionRef,
    appliedByWaypoint: {type: 'boolean'},
    companionIn: stepActionRef,
    l4PartIn: stepActionRef,
    rewrittenIn: stepActionRef,
    identityKeyed: {type: 'boolean'},
    dryRun: {type: 'boolean'},
    allowsNothing: {type: 'boolean'},
    waypointAllowFor: {type: 'array', items: {type: 'string'}},
  },
}

/** A step's record: the plan file's status.steps[] and the cluster record's steps[] (record.ts). */
export const stepStatus = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'phase', 'at', 'by'],
  properties: {
    id: {type: 'string'},
    phase: {enum: ['Pending', 'Running', 'Applied', 'Failed', 'Interrupted', 'RolledBack']},
    at: {type: 'string'},
    by: {type: 'string'},
    localUser: {type: 'string'},
    observed: {type: 'object'},
    message: {type: 'string'},
    attempts: {type: 'integer', minimum: 0},
  },
}

/** An `apply --ignore-fleet-order` (issue 22): who applied ahead of which earlier-wave namespaces. */
const fleetOrderOverride = {
  type: 'object',
  additionalProperties: false,
  required: ['at', 'by', 'fleet', 'pending'],
  properties: {
    at: {type: 'string'},
    by: {type: 'string'},
    localUser: {type: 'string'},
    fleet: {type: 'string'},
    pending: {type: 'array', items: {type: 'string'}},
  },
}

const storedObject = {
  type: 'object',
  properties: {
    metadata: {
      type: 'object',
      properties: {
        labels: {type: 'object', additionalProperties: {type: 'string'}},
        annotations: {type: 'object', additionalProperties: {type: 'string'}},
      },
    },
  },
}

/** Where the forms differ (see the head of this file). */
function slotsOf(form: Form) {
  const file = form !== 'expanded'
  return {
    file,
    /** v1alpha3: inventory items and hazards grouped into entries (plan-encoding.ts). */
    grouped: form === 'file',
    ref: file ? {anyOf: [refText, refObject]} : refObject,
    // In the file an operation names its object by its key in spec.objects.
    stored: file ? {type: 'string', minLength: 1} : kubeObject,
    text: form === 'file-v1alpha2' ? {anyOf: [{type: 'string'}, textReference]} : {type: 'string'},
    // In the file, an operation or check that names one object and nothing else is one line: `VERB REF`.
    oneLineOr: (verbs: string, full: object) =>
      file ? {anyOf: [{type: 'string', pattern: `^(${verbs}) \\S`}, full]} : full,
  }
}

type Slots = ReturnType<typeof slotsOf>

function operationSchema({file, ref, stored, oneLineOr}: Slots) {
  const operation = {
    type: 'object',
    required: ['op'],
    oneOf: [
      {
        additionalProperties: false,
        required: ['op', 'object'],
        properties: {op: {const: 'apply'}, object: stored},
      },
      {
        additionalProperties: false,
        // `object` in a step's deletes (what rollback re-creates; planfile checks it is there), not in undo.
        // In the file a delete that stores its object names it once, by the object's key (no `ref`).
        required: file ? ['op'] : ['op', 'ref'],
        ...(file ? {anyOf: [{required: ['ref']}, {required: ['object']}]} : {}),
        properties: {op: {const: 'delete'}, ref, object: stored},
      },
      {
        additionalProperties: false,
        required: ['op', 'ref', 'labels'],
        properties: {op: {const: 'label'}, ref, labels: labelMap},
      },
      {
        additionalProperties: false,
        required: ['op', 'ref', 'annotations'],
        properties: {op: {const: 'annotate'}, ref, annotations: labelMap},
      },
      {
        additionalProperties: false,
        required: ['op', 'ref'],
        properties: {op: {const: 'restart'}, ref},
      },
      {
        additionalProperties: false,
        required: ['op', 'ref', 'labels'],
        properties: {op: {const: 'template-labels'}, ref, labels: labelMap},
      },
    ],
  }

  return oneLineOr('apply|delete|restart', operation)
}

function checkSchemas({ref, oneLineOr}: Slots) {
  const precondition = {
    type: 'object',
    required: ['check'],
    oneOf: [
      {
        additionalProperties: false,
        required: ['check', 'labels'],
        properties: {check: {const: 'namespace-labels'}, labels: labelMap},
      },
      {
        additionalProperties: false,
        required: ['check', 'ref', 'fingerprint'],
        properties: {
          check: {const: 'object-unchanged'},
          ref,
          fingerprint: {type: 'string', pattern: '^sha256:[0-9a-f]{64}$'},
        },
      },
      {
        additionalProperties: false,
        required: ['check', 'ref'],
        properties: {check: {const: 'object-absent-or-ours'}, ref},
      },
      {additionalProperties: false, required: ['check', 'ref'], properties: {check: {const: 'object-present'}, ref}},
      {additionalProperties: false, required: ['check', 'ref'], properties: {check: {const: 'waypoint-ready'}, ref}},
    ],
  }

  const refList = {type: 'array', items: ref}

  const verification = {
    type: 'object',
    required: ['check'],
    oneOf: [
      {additionalProperties: false, required: ['check', 'ref'], properties: {check: {const: 'waypoint-ready'}, ref}},
      {
        additionalProperties: false,
        required: ['check', 'refs'],
        properties: {check: {const: 'objects-present'}, refs: refList},
      },
      {
        additionalProperties: false,
        required: ['check', 'refs'],
        properties: {check: {const: 'objects-absent'}, refs: refList},
      },
      {
        additionalProperties: false,
        required: ['check', 'labels'],
        properties: {check: {const: 'namespace-labels'}, labels: labelMap},
      },
      {
        additionalProperties: false,
        required: ['check', 'refs'],
        properties: {check: {const: 'rollouts-complete'}, refs: refList},
      },
      {
        additionalProperties: false,
        required: ['check', 'refs'],
        properties: {check: {const: 'pods-without-sidecar'}, refs: refList},
      },
      {
        additionalProperties: false,
        required: ['check', 'refs'],
        properties: {check: {const: 'pods-captured'}, refs: refList},
      },
      {
        additionalProperties: false,
        required: ['check', 'refs'],
        properties: {check: {const: 'pods-opted-out'}, refs: refList},
      },
      {
        additionalProperties: false,
        required: ['check', 'ref', 'services'],
        properties: {check: {const: 'waypoint-bound'}, ref, services: {type: 'array', items: {type: 'string'}}},
      },
      {
        additionalProperties: false,
        required: ['check', 'refs'],
        properties: {check: {const: 'pods-with-sidecar'}, refs: refList},
      },
      {
        additionalProperties: false,
        required: ['check', 'checks'],
        properties: {check: {const: 'preflight'}, checks: {type: 'array', items: {type: 'string'}}},
      },
    ],
  }

  // What an undo checks before it writes (src/plan/undo-guards.ts).
  const undoPrecondition = {
    type: 'object',
    required: ['check'],
    oneOf: [
      {
        additionalProperties: false,
        required: ['check', 'revision'],
        properties: {check: {const: 'revision-injects'}, revision: {type: 'string', minLength: 1}},
      },
      {
        additionalProperties: false,
        required: ['check', 'allowed'],
        properties: {check: {const: 'pods-stay-in-mesh'}, allowed: refList},
      },
    ],
  }

  return {
    precondition: oneLineOr('object-absent-or-ours|object-present|waypoint-ready', precondition),
    verification: oneLineOr('waypoint-ready', verification),
    undoPrecondition,
  }
}

/** Shapes the plan uses in more than one place, stored once under `definitions`. */
function sharedDefinitions(slots: Slots) {
  const {verification} = checkSchemas(slots)
  return {operation: operationSchema(slots), verification}
}

function stepSchema(slots: Slots) {
  const {ref, text} = slots
  const operationItem = {$ref: '#/definitions/operation'}
  const verification = {$ref: '#/definitions/verification'}
  const {precondition, undoPrecondition} = checkSchemas(slots)
  const step = {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'action', 'description', 'preconditions', 'operations', 'verify', 'undo'],
    properties: {
      id: {type: 'string', pattern: '^[a-z0-9][a-z0-9-]*$'},
      action: {enum: [...STEP_ACTIONS]},
      description: text,
      preconditions: {type: 'array', items: precondition},
      operations: {type: 'array', items: operationItem},
      manual: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['ref', 'reason'],
          properties: {ref, reason: text},
        },
      },
      verify: {type: 'array', items: verification},
      undo: {
        type: 'object',
        additionalProperties: false,
        required: ['description', 'operations'],
        properties: {
          description: text,
          preconditions: {type: 'array', items: undoPrecondition},
          operations: {type: 'array', items: operationItem},
          verify: {type: 'array', items: verification},
        },
      },
    },
  }
  return step
}

function recordSchemas({ref, text}: Slots) {
  const finding = {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'code', 'severity', 'message'],
    properties: {
      id: {type: 'string'},
      code: {type: 'string'},
      severity: {enum: ['info', 'warning', 'error', 'blocker']},
      message: text,
      ref,
      fix: text,
      handledBy: {type: 'string'},
    },
  }

  const inventoryItem = {
    type: 'object',
    additionalProperties: false,
    required: ['ref', 'verdict', 'action', 'reasons'],
    properties: {
      ref,
      verdict: {enum: ['L4', 'L7', 'inert', 'unaffected', 'blocker']},
      action: {enum: ['keep', 'keep-verify', 'retarget', 'lost-client-side', 'no-effect', 'manual', 'blocker']},
      reasons: {type: 'array', items: text},
      scope: {type: 'string'},
      ztunnel: {enum: ['as-written', 'deny-all', 'narrowed', 'broadened', 'no-op', 'ignored']},
      services: {type: 'array', items: {type: 'string'}},
    },
  }

  const workloadItem = {
    type: 'object',
    additionalProperties: false,
    required: ['ref', 'proxy', 'lostAnnotations', 'traits', 'podLabels'],
    properties: {
      ref,
      proxy: {enum: ['sidecar', 'sidecar-native', 'ambient', 'none']},
      predicted: {type: 'boolean'},
      pods: {
        type: 'object',
        additionalProperties: false,
        properties: {
          total: {type: 'integer'},
          sidecar: {type: 'integer'},
          ambient: {type: 'integer'},
          none: {type: 'integer'},
        },
      },
      lostAnnotations: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['key', 'replacement'],
          properties: {key: {type: 'string'}, replacement: {type: 'string'}},
        },
      },
      traits: {type: 'array', items: {type: 'string'}},
      serviceAccount: {type: 'string'},
      podLabels: {type: 'object', additionalProperties: {type: 'string'}},
    },
  }

  const hazard = {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'kind', 'phase', 'from', 'until', 'workloads', 'message'],
    properties: {
      id: {type: 'string'},
      kind: {type: 'string'},
      phase: {enum: ['apply', 'rollback']},
      from: {type: 'string'},
      until: {type: 'string'},
      window: {type: 'string'},
      policy: {type: 'string'},
      workloads: {type: 'array', items: {type: 'string'}},
      message: text,
      accepted: {type: 'boolean'},
    },
  }

  return {finding, inventoryItem, workloadItem, hazard}
}

/** v1alpha3's inventory and hazard entries: one for neighbours that share all but their names (plan-encoding.ts). */
function groupedSchemas() {
  const {inventoryItem, hazard} = recordSchemas(slotsOf('expanded'))
  const {ref: _r, reasons: _reasons, services, ...shared} = inventoryItem.properties
  const inventoryEntry = {
    type: 'object',
    additionalProperties: false,
    required: ['kind', 'verdict', 'action', 'reasons', 'objects'],
    properties: {
      // `[apiVersion] Kind`: without an apiVersion, spec.apiVersions gives the kind's.
      kind: {type: 'string', pattern: '^(\\S+ )?[^\\s/]+$'},
      namespace: {type: 'string', minLength: 1},
      ...shared,
      // null (~): the place of each object's own reason.
      reasons: {type: 'array', items: {type: ['string', 'null']}},
      objects: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: {
            name: {type: 'string', minLength: 1},
            reasons: {type: 'array', items: {type: 'string'}},
            services,
          },
        },
      },
    },
  }
  const {id, policy, workloads, message, ...sharedByHazards} = hazard.properties
  const hazardEntry = {
    type: 'object',
    additionalProperties: false,
    required: ['kind', 'phase', 'from', 'until', 'hazards'],
    properties: {
      ...sharedByHazards,
      hazards: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['id', 'workloads', 'message'],
          properties: {id, policy, workloads, message},
        },
      },
    },
  }
  return {inventoryEntry, hazardEntry}
}

/** The file's tables: the kinds' apiVersions and the objects (plan-encoding.ts); v1alpha2 adds spec.texts. */
function tableSchemas() {
  return {
    apiVersions: {type: 'object', additionalProperties: {type: 'string', minLength: 1}},
    objects: {type: 'object', propertyNames: {minLength: 1}, additionalProperties: storedObject},
  }
}

const API_VERSIONS: Record<Form, string> = {
  expanded: 'mesh-migrate.io/v1alpha1',
  file: 'mesh-migrate.io/v1alpha3',
  'file-v1alpha2': 'mesh-migrate.io/v1alpha2',
}
const TITLES: Record<Form, string> = {
  expanded: 'mesh-migrate MigrationPlan',
  file: 'mesh-migrate MigrationPlan file (v1alpha3: references in one line, objects stored once, neighbours that share a verdict in one entry)',
  'file-v1alpha2':
    'mesh-migrate MigrationPlan file (v1alpha2: references in one line, objects and repeated texts stored once)',
}
const texts = {type: 'object', propertyNames: {pattern: '^[0-9a-f]{8,}$'}, additionalProperties: {type: 'string'}}

function planSchema(form: Form) {
  const slots = slotsOf(form)
  const {file, stored} = slots
  const step = stepSchema(slots)
  const {finding, inventoryItem, workloadItem, hazard} = recordSchemas(slots)
  const tables = {...(file ? tableSchemas() : {}), ...(form === 'file-v1alpha2' ? {texts} : {})}
  const grouped = slots.grouped ? groupedSchemas() : undefined
  const version = API_VERSIONS[form]

  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: `https://mesh-migrate.io/schemas/${file ? 'migration-plan-file' : 'migration-plan'}-${version.split('/')[1]}.json`,
    title: TITLES[form],
    type: 'object',
    additionalProperties: false,
    required: ['apiVersion', 'kind', 'metadata', 'spec'],
    definitions: sharedDefinitions(slots),
    properties: {
      apiVersion: {const: version},
      kind: {const: 'MigrationPlan'},
      metadata: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'namespace', 'generator'],
        properties: {name: {type: 'string'}, namespace: {type: 'string', minLength: 1}, generator: {type: 'string'}},
      },
      spec: {
        type: 'object',
        additionalProperties: false,
        // prettier-ignore
        required: ['target', 'options', 'observed', 'summary', 'blockers', 'findings', 'inventory', 'workloads', 'waypoints', 'policies', 'hazards', 'steps', ...Object.keys(tables)],
        properties: {
          ...specHeaderSchemas(),
          blockers: {type: 'array', items: finding},
          findings: {type: 'array', items: finding},
          inventory: {type: 'array', items: grouped?.inventoryEntry ?? inventoryItem},
          workloads: {type: 'array', items: workloadItem},
          waypoints: {type: 'array', items: stored},
          policies: {type: 'array', items: policyTimelineInput},
          hazards: {type: 'array', items: grouped?.hazardEntry ?? hazard},
          steps: {type: 'array', items: step},
          ...tables,
        },
      },
      status: {
        type: 'object',
        additionalProperties: false,
        required: ['specDigest', 'steps'],
        properties: {
          specDigest: {type: 'string', pattern: '^sha256:[0-9a-f]{64}$'},
          replaces: {type: 'string', pattern: '^sha256:[0-9a-f]{64}$'},
          steps: {type: 'array', items: stepStatus},
          fleetOrderOverrides: {type: 'array', items: fleetOrderOverride},
        },
      },
    },
  }
}

/** spec.target, spec.options, spec.observed and spec.summary: the same in both forms. */
function specHeaderSchemas() {
  return {
    target: {
      oneOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['manifests'],
          properties: {manifests: {type: 'array', items: {type: 'string'}}},
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['context', 'server', 'clusterID'],
          properties: {context: {type: 'string'}, server: {type: 'string'}, clusterID: {type: 'string'}},
        },
      ],
    },
    options: {
      type: 'object',
      additionalProperties: false,
      required: ['rootNamespace', 'waypointName', 'waypointFor'],
      properties: {
        rootNamespace: {type: 'string'},
        waypointName: {type: 'string'},
        waypointFor: {enum: ['service', 'workload', 'all']},
        routes: {enum: ['virtualservice', 'httproute']},
        optedOut: {enum: ['keep-out', 'enroll']},
        denyWaypointBypass: {type: 'boolean'},
        waypointCanary: {type: 'array', minItems: 1, items: {type: 'integer', minimum: 1, maximum: 99}},
        acceptLost: {type: 'array', items: {type: 'string'}},
        acceptHazards: {type: 'array', items: {type: 'string'}},
      },
    },
    observed: {
      type: 'object',
      additionalProperties: false,
      required: ['namespaceLabels', 'fingerprint'],
      properties: {
        namespaceLabels: {type: 'object', additionalProperties: {type: 'string'}},
        fingerprint: {type: 'string'},
        trustDomain: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'source'],
          properties: {
            name: {type: 'string', minLength: 1},
            aliases: {type: 'array', items: {type: 'string'}},
            source: {type: 'string'},
          },
        },
        waypointPrincipals: {type: 'array', items: {type: 'string', minLength: 1}},
        objects: {type: 'object', additionalProperties: {type: 'string', pattern: '^[0-9a-f]{16}$'}},
        keptRules: {type: 'object', additionalProperties: {type: 'string', pattern: '^sha256:[0-9a-f]{64}$'}},
      },
    },
    summary: {
      type: 'object',
      additionalProperties: false,
      required: ['from', 'to', 'waypointRequired', 'blockers', 'steps'],
      properties: {
        from: {type: 'string'},
        to: {const: 'ambient'},
        waypointRequired: {type: 'boolean'},
        blockers: {type: 'integer', minimum: 0},
        steps: {type: 'integer', minimum: 0},
      },
    },
  }
}

/** The expanded plan: `plan -o json`, `show -o json`, and plan files of mesh-migrate.io/v1alpha1. */
export const PLAN_SCHEMA = planSchema('expanded')
/** The plan file as written since mesh-migrate.io/v1alpha3 (what the yaml-language-server header names). */
export const PLAN_FILE_SCHEMA = planSchema('file')
/** The plan file as mesh-migrate.io/v1alpha2 wrote it (repeated texts in spec.texts): still read. */
export const PLAN_FILE_V1ALPHA2_SCHEMA = planSchema('file-v1alpha2')
