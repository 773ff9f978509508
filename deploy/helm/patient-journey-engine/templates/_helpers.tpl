{{/* The release's full name, at most 63 characters (a DNS label). */}}
{{- define "pje.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's objects: <fullname>-<component>. */}}
{{- define "pje.componentName" -}}
{{- printf "%s-%s" (include "pje.fullname" .root | trunc 50 | trimSuffix "-") .component -}}
{{- end -}}

{{- define "pje.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "pje.labels" -}}
{{ include "pje.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "pje.image" -}}
{{- $i := .Values.image -}}
{{- if $i.digest -}}
{{- printf "%s@%s" $i.repository $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $i.repository (default .Chart.AppVersion $i.tag) -}}
{{- end -}}
{{- end -}}

{{- define "pje.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "pje.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Where the Secret's files are mounted, and each secret's file. */}}
{{- define "pje.secretsDir" -}}/run/secrets/engine{{- end -}}

{{/*
The pod-level parts every component shares: service account, security context, scheduling. `.component` names the
component for the topology spread.
*/}}
{{- define "pje.podCommon" -}}
serviceAccountName: {{ include "pje.serviceAccountName" .root }}
automountServiceAccountToken: false
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Spread a component's replicas over nodes where the cluster allows it. */}}
{{- define "pje.spread" -}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "pje.selectorLabels" . | nindent 8 }}
{{- end -}}

{{/* The environment the API and the workers share, beyond the ConfigMap: secrets as files, S3 credentials. */}}
{{- define "pje.engineSecretEnv" -}}
{{- $dir := include "pje.secretsDir" . -}}
- name: WEBHOOK_SECRET_FILE
  value: {{ $dir }}/webhook_secret
- name: PAYLOAD_ENCRYPTION_KEYS_FILE
  value: {{ $dir }}/payload_encryption_keys
- name: CLINICS_FILE
  value: {{ $dir }}/clinics.json
{{- if .Values.secrets.keys.temporalApiKey }}
- name: TEMPORAL_API_KEY_FILE
  value: {{ $dir }}/temporal_api_key
{{- end }}
{{- if .Values.temporal.mtlsSecret }}
- name: TEMPORAL_TLS_CERT
  value: /run/secrets/temporal-tls/tls.crt
- name: TEMPORAL_TLS_KEY
  value: /run/secrets/temporal-tls/tls.key
{{- end }}
{{- include "pje.s3CredentialsEnv" . }}
{{- end -}}

{{/* The engine Secret's items a component mounts: `.items` lists the names (webhookSecret, ...). */}}
{{- define "pje.secretVolume" -}}
- name: engine-secrets
  secret:
    secretName: {{ required "secrets.existingSecret: the name of the Secret with the engine's secrets" .root.Values.secrets.existingSecret }}
    defaultMode: 0440
    items:
      {{- $files := dict "webhookSecret" "webhook_secret" "payloadEncryptionKeys" "payload_encryption_keys" "clinics" "clinics.json" "inboxDatabaseUrl" "inbox_database_url" "codecServerToken" "codec_server_token" "temporalApiKey" "temporal_api_key" "patientKeyDatabaseUrl" "patient_key_database_url" }}
      {{- range .items }}
      {{- $key := index $.root.Values.secrets.keys . }}
      {{- if $key }}
      - key: {{ $key }}
        path: {{ index $files . }}
      {{- end }}
      {{- end }}
{{- end -}}

{{/* Writable folders on a read-only root file system. */}}
{{- define "pje.scratchVolumes" -}}
- name: tmp
  emptyDir: {}
- name: data
  emptyDir: {}
{{- end -}}

{{- define "pje.scratchMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /data
{{- end -}}

{{/* This release's worker build id: worker.versioning.buildId, else the image tag, else the chart's appVersion. */}}
{{- define "pje.buildId" -}}
{{- .Values.worker.versioning.buildId | default .Values.image.tag | default .Chart.AppVersion -}}
{{- end -}}

{{/* A build id as a label value and a name suffix: lower case, [a-z0-9-], at most 40 characters. */}}
{{- define "pje.buildLabel" -}}
{{- regexReplaceAll "[^a-z0-9-]+" (lower .) "-" | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/*
The operators' identity provider (values `oidc`): checks that fail with a message before anything renders. Included
by the ConfigMap, which every release renders.
*/}}
{{- define "pje.validateOidc" -}}
{{- $o := .Values.oidc -}}
{{- if and $o.issuerUrl (not $o.audience) -}}
{{- fail "oidc.audience: required with oidc.issuerUrl (the audience its tokens name, e.g. journey-engine)" -}}
{{- end -}}
{{- if and $o.audience (not $o.issuerUrl) -}}
{{- fail "oidc.issuerUrl: required with oidc.audience (the issuer exactly as its tokens' iss says)" -}}
{{- end -}}
{{- range $component := list "worker" "api" -}}
{{- if index $o.clientSecrets $component -}}
{{- if not $o.tokenUrl -}}
{{- fail (printf "oidc.tokenUrl: required with oidc.clientSecrets.%s (the provider's token endpoint, as the pods reach it)" $component) -}}
{{- end -}}
{{- if not (index $o.clients $component) -}}
{{- fail (printf "oidc.clients.%s: the client id of the service account whose secret oidc.clientSecrets.%s holds" $component $component) -}}
{{- end -}}
{{- if $.Values.secrets.keys.temporalApiKey -}}
{{- fail (printf "oidc.clientSecrets.%s: not with secrets.keys.temporalApiKey; a connection to Temporal presents an API key or a service account's token, not both" $component) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.codec.enabled (not .Values.secrets.keys.codecServerToken) (not $o.issuerUrl) -}}
{{- fail "secrets.keys.codecServerToken: the codec server requires a token, unless oidc.issuerUrl identifies its callers" -}}
{{- end -}}
{{- end -}}

{{/* How the codec server and the API check an operator's access token (nothing without oidc.issuerUrl). */}}
{{- define "pje.oidcEnv" -}}
{{- $o := .Values.oidc -}}
{{- if $o.issuerUrl }}
- name: OIDC_ISSUER
  value: {{ $o.issuerUrl | quote }}
- name: OIDC_AUDIENCE
  value: {{ $o.audience | quote }}
{{- with $o.jwksUrl }}
- name: OIDC_JWKS_URL
  value: {{ . | quote }}
{{- end }}
- name: OIDC_ROLE_CLAIM
  value: {{ $o.roleClaim | quote }}
{{- end }}
{{- end -}}

{{/* Where a service account's client secret is mounted. */}}
{{- define "pje.oidcClientDir" -}}/run/secrets/oidc-client{{- end -}}

{{/*
The service account a component (`.component`: worker or api) presents to Temporal, when oidc.clientSecrets names
its Secret: its id, its secret as a file, the token endpoint. `pje.oidcClientMount` and `pje.oidcClientVolume` go
with it.
*/}}
{{- define "pje.serviceAccountEnv" -}}
{{- $o := .root.Values.oidc -}}
{{- if index $o.clientSecrets .component }}
- name: TEMPORAL_OAUTH_CLIENT_ID
  value: {{ index $o.clients .component | quote }}
- name: TEMPORAL_OAUTH_CLIENT_SECRET_FILE
  value: {{ include "pje.oidcClientDir" . }}/client_secret
- name: TEMPORAL_OAUTH_TOKEN_URL
  value: {{ $o.tokenUrl | quote }}
{{- end }}
{{- end -}}

{{- define "pje.oidcClientMount" -}}
{{- if index .root.Values.oidc.clientSecrets .component }}
- name: oidc-client
  mountPath: {{ include "pje.oidcClientDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "pje.oidcClientVolume" -}}
{{- $o := .root.Values.oidc -}}
{{- with index $o.clientSecrets .component }}
- name: oidc-client
  secret:
    secretName: {{ . }}
    defaultMode: 0440
    items:
      - key: {{ $o.clientSecretKey }}
        path: client_secret
{{- end }}
{{- end -}}

{{/*
The audit trail (values `audit`): with `postgres`, the API, the workers and the codec server append to one table,
as the writer whose URL the Secret `audit.databaseUrlSecret` holds. Checked by the ConfigMap, which every release
renders; values.schema.json says the same.
*/}}
{{- define "pje.validateAudit" -}}
{{- $a := .Values.audit -}}
{{- if ne $a.store "postgres" -}}
{{- fail (printf "audit.store: postgres, not %v (the engine records who reads patient data; a file in a pod is lost with it)" $a.store) -}}
{{- end -}}
{{- if not $a.databaseUrlSecret.name -}}
{{- fail "audit.databaseUrlSecret.name: required (an existing Secret with the audit writer role's postgres:// URL)" -}}
{{- end -}}
{{- if not $a.checkpoints.bucket -}}
{{- fail "audit.checkpoints.bucket: required (a bucket with Object Lock for the audit trail's checkpoints)" -}}
{{- end -}}
{{- end -}}

{{/* Where the audit trail's URL is mounted. */}}
{{- define "pje.auditDir" -}}/run/secrets/audit{{- end -}}

{{/* The audit trail's settings: the shared table, its head checkpointed to the locked bucket. */}}
{{- define "pje.auditEnv" -}}
{{- $c := .Values.audit.checkpoints -}}
- name: AUDIT_STORE
  value: postgres
- name: AUDIT_DATABASE_URL_FILE
  value: {{ include "pje.auditDir" . }}/database_url
- name: AUDIT_CHECKPOINT_BUCKET
  value: {{ $c.bucket | quote }}
- name: AUDIT_CHECKPOINT_PREFIX
  value: {{ $c.prefix | quote }}
- name: AUDIT_CHECKPOINT_RETENTION_DAYS
  value: {{ $c.retentionDays | quote }}
- name: AUDIT_CHECKPOINT_REGION
  value: {{ .Values.attachments.s3.region | quote }}
{{- with .Values.attachments.s3.endpoint }}
- name: AUDIT_CHECKPOINT_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
Per-patient data keys (every payload of a patient's journeys sealed under their key; an erasure destroys it): with
secrets.keys.patientKeyDatabaseUrl set, the tables every process shares at that database (a role of its own, that may
create them at the first start), erasures logged in the audit checkpoints' bucket; without it, off (journeys sealed by
the payload keys alone, and POST /v1/patients/erasure answers 409).
*/}}
{{- define "pje.patientKeyEnv" -}}
{{- if .Values.secrets.keys.patientKeyDatabaseUrl }}
- name: PATIENT_KEY_STORE
  value: postgres
- name: PATIENT_KEY_DATABASE_URL_FILE
  value: {{ include "pje.secretsDir" . }}/patient_key_database_url
{{- else }}
- name: PATIENT_KEY_STORE
  value: 'off'
{{- end }}
{{- end -}}

{{/* The object store's credentials (attachments, audit checkpoints): a Secret, or the pod's identity when none. */}}
{{- define "pje.s3CredentialsEnv" -}}
{{- with .Values.attachments.s3.credentialsSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.attachments.s3.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.attachments.s3.secretAccessKeyKey }}
{{- end }}
{{- end -}}

{{- define "pje.auditMount" -}}
- name: audit-database
  mountPath: {{ include "pje.auditDir" . }}
  readOnly: true
{{- end -}}

{{- define "pje.auditVolume" -}}
{{- $a := .Values.audit -}}
- name: audit-database
  secret:
    secretName: {{ $a.databaseUrlSecret.name }}
    defaultMode: 0440
    items:
      - key: {{ $a.databaseUrlSecret.key }}
        path: database_url
{{- end -}}
