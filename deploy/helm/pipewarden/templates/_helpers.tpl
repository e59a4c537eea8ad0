{{/* Names: as kustomize's (pipewarden, pipewarden-metrics, ...) for a release named pipewarden. */}}
{{- define "pipewarden.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selects this release's pods; kustomize selects on the name alone. */}}
{{- define "pipewarden.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Kubeflow's labels for Kubeflow Pipelines' parts (as deploy/base has them), and Helm's. */}}
{{- define "pipewarden.labels" -}}
{{ include "pipewarden.selectorLabels" . }}
app.kubernetes.io/part-of: kubeflow
app.kubernetes.io/component: controller
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
application-crd-id: kubeflow-pipelines
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The rebuild policy and exit mode: given, or what `enforce` implies. */}}
{{- define "pipewarden.rebuildPolicy" -}}
{{- $policy := .Values.rebuildPolicy | default (ternary "always" "disable" .Values.enforce) -}}
{{- if not (has $policy (list "disable" "always" "on-version-change")) -}}
{{- fail (printf "rebuildPolicy %q: expected disable, always or on-version-change" $policy) -}}
{{- end -}}
{{- $policy -}}
{{- end -}}

{{- define "pipewarden.exitMode" -}}
{{- $mode := .Values.exitMode | default (ternary "notify" "observe" .Values.enforce) -}}
{{- if not (has $mode (list "observe" "notify")) -}}
{{- fail (printf "exitMode %q: expected observe or notify" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{- define "pipewarden.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository ($image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The policy's pin: the value, or the chart's policy/policy.sha256. */}}
{{- define "pipewarden.policySha256" -}}
{{- $pin := .Values.policy.sha256 | default (.Files.Get "policy/policy.sha256") -}}
{{- if not $pin -}}
{{- fail "no policy pin: run deploy/helm/add-policy.sh (after `make policies`), set policy.sha256, or use policy.source=oci" -}}
{{- end -}}
{{- $pin -}}
{{- end -}}

{{/* Lease names, one per shard: <leaseName>-shard-I-of-N, or <leaseName> unsharded. */}}
{{- define "pipewarden.leases" -}}
{{- $leases := list -}}
{{- $count := int .Values.shards -}}
{{- if gt $count 1 -}}
{{- range $index := until $count -}}
{{- $leases = append $leases (printf "%s-shard-%d-of-%d" $.Values.leaseName $index $count) -}}
{{- end -}}
{{- else -}}
{{- $leases = list .Values.leaseName -}}
{{- end -}}
{{- toJson $leases -}}
{{- end -}}

{{/* Refuses a release that would run no loop. */}}
{{- define "pipewarden.checkLoops" -}}
{{- if not (or .Values.swfLoop.enabled .Values.exitGate.enabled) -}}
{{- fail "swfLoop.enabled and exitGate.enabled are both false: pipewarden would run no loop. Keep one on (Argo Workflows without Kubeflow: --set swfLoop.enabled=false alone), or uninstall the release" -}}
{{- end -}}
{{- end -}}

{{/* "true" when a loop that runs writes (as pipewarden_mode_info reports it), else empty. */}}
{{- define "pipewarden.writes" -}}
{{- $swf := and .Values.swfLoop.enabled (ne (include "pipewarden.rebuildPolicy" .) "disable") -}}
{{- $exit := and .Values.exitGate.enabled (eq (include "pipewarden.exitMode" .) "notify") -}}
{{- if or $swf $exit }}true{{ end -}}
{{- end -}}
