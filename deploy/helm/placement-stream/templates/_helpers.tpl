{{/* Names and labels shared by the templates. */}}

{{- define "placement-stream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name; pod names add "-<ordinal>", so it stays short enough for a label value. */}}
{{- define "placement-stream.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "placement-stream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "placement-stream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "placement-stream.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "placement-stream.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: placement-stream
{{- end }}

{{- define "placement-stream.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "placement-stream.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "placement-stream.queueConfigMap" -}}
{{- default (printf "%s-queues" (include "placement-stream.fullname" .)) .Values.queueConfig.existingConfigMap }}
{{- end }}

{{/*
The secrets entries, each with the variable that names its file (docs/security.md) and the file's name under
the secrets volume.
*/}}
{{- define "placement-stream.secretFiles" -}}
saslPassword: {variable: PLACEMENT_KAFKA__SASL_PASSWORD_FILE, file: kafka-sasl-password}
oauthToken: {variable: PLACEMENT_KAFKA__SASL_OAUTH_TOKEN_FILE, file: kafka-oauth-token}
caCert: {variable: PLACEMENT_KAFKA__SSL_CA_FILE, file: kafka-ca.crt}
clientCert: {variable: PLACEMENT_KAFKA__SSL_CERT_FILE, file: kafka-user.crt}
clientKey: {variable: PLACEMENT_KAFKA__SSL_KEY_FILE, file: kafka-user.key}
clientKeyPassword: {variable: PLACEMENT_KAFKA__SSL_KEY_PASSWORD_FILE, file: kafka-user-key-password}
explainToken: {variable: PLACEMENT_EXPLAIN_TOKEN_FILE, file: explain-token}
{{- end }}

{{- define "placement-stream.secretsDir" -}}
/var/run/secrets/placement-stream
{{- end }}

{{/* The secrets entries that name a Secret, as a YAML list of {entry, variable, file, secretName, key}. */}}
{{- define "placement-stream.mountedSecrets" -}}
{{- $files := include "placement-stream.secretFiles" . | fromYaml }}
{{- $found := list }}
{{- range $entry := keys $files | sortAlpha }}
{{- $given := get $.Values.secrets $entry | default dict }}
{{- if $given.secretName }}
{{- $found = append $found (merge (dict "entry" $entry "secretName" $given.secretName "key" $given.key) (get $files $entry)) }}
{{- end }}
{{- end }}
{{- toYaml (dict "items" $found) }}
{{- end }}
