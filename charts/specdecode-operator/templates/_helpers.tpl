{{/* Names and labels shared by every template. */}}

{{- define "specdecode-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "specdecode-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "specdecode-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "specdecode-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "specdecode-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "specdecode-operator.labels" -}}
helm.sh/chart: {{ include "specdecode-operator.chart" . }}
{{ include "specdecode-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "specdecode-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "specdecode-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "specdecode-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The rules the operator needs in every namespace it serves, derived from its code:
- specdecoderollouts: kopf lists and watches them and patches its progress annotations;
  the operator removes the consumed `specdecode.io/action` annotation with a JSON patch.
- specdecoderollouts/status: the operator writes the whole status with a merge patch.
- specdecodetunings (+ /status): the same for tunings; `create` (and patch) on
  specdecoderollouts starts the winner's rollout of a tuning with `apply: true`.
- deployments, services: children are server-side applied (patch; create when absent)
  and shadows are deleted; deployments (and pods) are listed to observe readiness; `get`
  only when a create-only apply is refused, to tell a child of ours the watch has not
  delivered yet from somebody else's object of that name (left untouched).
- pods: watched (also where the shadow engines' ready pods answer, for the load pods); the
  shadow-load pods of each analysis stage are created and deleted (the operator sends no
  inference traffic itself).
- configmaps, secrets: `get` of the one prompt set a rollout names, and of a tuning's
  report and trial-data ConfigMaps (which it also creates, patches, deletes); never list
  or watch. Secrets: also `create` of each rollout's load-pod token (owned by the rollout,
  so deleted with it); the operator reads back only that Secret, by name.
- events: one core/v1 Event per transition, posted before the status write; deleted only
  when that write is refused (409), so none announces a transition that never happened.
*/}}
{{- define "specdecode-operator.namespacedRules" -}}
- apiGroups: ["specdecode.io"]
  resources: ["specdecoderollouts"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["specdecode.io"]
  resources: ["specdecoderollouts/status"]
  verbs: ["patch"]
# Tunings; `apply: true` starts (creates, or patches) the winner's rollout.
- apiGroups: ["specdecode.io"]
  resources: ["specdecodetunings"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["specdecode.io"]
  resources: ["specdecodetunings/status"]
  verbs: ["patch"]
- apiGroups: ["specdecode.io"]
  resources: ["specdecoderollouts"]
  verbs: ["create"]
# Children: watched (the operator's cache), written only where they differ.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "create", "delete"]
- apiGroups: [""]
  resources: ["configmaps", "secrets"]
  verbs: ["get"]
# Each rollout's load-pod token: a Secret it owns, created once (read back only by name).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create"]
# A tuning's report and trial-data ConfigMaps (server-side apply; removed when done).
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "delete"]
# Mirror traffic: RequestMirror filters on the user's HTTPRoute (only ours are changed).
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes"]
  verbs: ["list", "watch", "patch"]
{{- end }}

{{- define "specdecode-operator.leaderElectionRules" -}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
{{- end }}

{{/*
Cluster-scoped reads kopf makes to discover what it serves: CRDs always (it watches them
for resources appearing), namespaces only when it serves a list of namespaces.
*/}}
{{- define "specdecode-operator.discoveryRules" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["list", "watch"]
{{- if .Values.watchNamespaces }}
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- end }}
{{- end }}
