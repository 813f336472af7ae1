{{- define "floe.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "floe.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* selector labels of one component (agent, compactor) */}}
{{- define "floe.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "floe.metadataSecret" -}}
{{- .Values.metadata.existingSecret | default (printf "%s-metadata" (include "floe.fullname" .)) -}}
{{- end -}}

{{- define "floe.bucketSecret" -}}
{{- .Values.bucket.existingSecret | default (printf "%s-bucket" (include "floe.fullname" .)) -}}
{{- end -}}

{{- define "floe.hasBucketSecret" -}}
{{- if or .Values.bucket.existingSecret .Values.bucket.accessKeyId }}true{{ end -}}
{{- end -}}

{{/* the environment agents and compactors share: stores, credentials */}}
{{- define "floe.storeEnv" -}}
- name: FLOE_METADATA
  valueFrom:
    secretKeyRef:
      name: {{ include "floe.metadataSecret" . }}
      key: url
- name: FLOE_BUCKET
  value: {{ required "bucket.url is required" .Values.bucket.url | quote }}
{{- if include "floe.hasBucketSecret" . }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ include "floe.bucketSecret" . }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "floe.bucketSecret" . }}
      key: AWS_SECRET_ACCESS_KEY
{{- end }}
- name: FLOE_ICEBERG
  value: {{ .Values.iceberg.enabled | quote }}
- name: FLOE_ICEBERG_NAMESPACE
  value: {{ .Values.iceberg.namespace | quote }}
{{- end -}}

{{/* GOMEMLIMIT from the container's memory limit, in bytes */}}
{{- define "floe.gomemlimit" -}}
- name: GOMEMLIMIT
  valueFrom:
    resourceFieldRef:
      resource: limits.memory
      divisor: "1"
{{- end -}}
