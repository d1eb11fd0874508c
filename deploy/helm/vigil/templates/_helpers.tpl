{{/* The name prefix of every object: the release name, with "-vigil" unless it says vigil already. */}}
{{- define "vigil.fullname" -}}
{{- if contains "vigil" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-vigil" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "vigil.labels" -}}
app.kubernetes.io/name: vigil
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels that select the pods of the release. */}}
{{- define "vigil.selector" -}}
app.kubernetes.io/name: vigil
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vigil.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secret of gossip key, raft secret and tokens. */}}
{{- define "vigil.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-credentials" (include "vigil.fullname" .)) -}}
{{- end -}}

{{/* The headless Service that gives voters their stable names. */}}
{{- define "vigil.voterService" -}}
{{ include "vigil.fullname" . }}-voter
{{- end -}}

{{/* The headless Service of the gossip pool's members (checkers and locations), their join address. */}}
{{- define "vigil.gossipService" -}}
{{ include "vigil.fullname" . }}-gossip
{{- end -}}

{{/* The URL scheme of the control API. */}}
{{- define "vigil.scheme" -}}
{{- if .Values.tls.existingSecret }}https{{ else }}http{{ end -}}
{{- end -}}

{{/* The stable DNS name of voter N (call with a dict of "root" and "n"). */}}
{{- define "vigil.voterHost" -}}
{{- $root := .root -}}
{{ include "vigil.fullname" $root }}-voter-{{ .n }}.{{ include "vigil.voterService" $root }}.{{ $root.Release.Namespace }}.svc.{{ $root.Values.clusterDomain }}
{{- end -}}

{{/* Comma-separated API URLs of every voter: -control of the data plane, -join of voters. */}}
{{- define "vigil.voterURLs" -}}
{{- $root := . -}}
{{- $urls := list -}}
{{- range $n := until (int .Values.voters.replicas) -}}
{{- $urls = append $urls (printf "%s://%s:%d" (include "vigil.scheme" $root) (include "vigil.voterHost" (dict "root" $root "n" $n)) (int $root.Values.ports.api)) -}}
{{- end -}}
{{- join "," $urls -}}
{{- end -}}

{{/* Environment every agent gets: its pod's name and address, expanded in its arguments. */}}
{{- define "vigil.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end -}}

{{/* Arguments of TLS, when tls.existingSecret names one (call with a dict of "root" and "role"). */}}
{{- define "vigil.tlsArgs" -}}
{{- if .root.Values.tls.existingSecret }}
- -tls-cert=/etc/vigil/tls/{{ .role }}.pem
- -tls-key=/etc/vigil/tls/{{ .role }}-key.pem
- -tls-ca=/etc/vigil/tls/ca.pem
{{- end }}
{{- end -}}

{{/* Volume mounts of credentials (call with a dict of "root" and "dnssec"). */}}
{{- define "vigil.credentialMounts" -}}
- name: credentials
  mountPath: /etc/vigil/credentials
  readOnly: true
{{- if .root.Values.tls.existingSecret }}
- name: tls
  mountPath: /etc/vigil/tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "vigil.credentialVolumes" -}}
- name: credentials
  secret:
    secretName: {{ include "vigil.secretName" . }}
    defaultMode: 0400
{{- if .Values.tls.existingSecret }}
- name: tls
  secret:
    secretName: {{ .Values.tls.existingSecret }}
    defaultMode: 0400
{{- end }}
{{- end -}}

{{/* Arguments of the data plane (checkers and locations) of one region: a dict of "root", "region" and "role". */}}
{{- define "vigil.dataPlaneArgs" -}}
{{- $root := .root -}}
- agent
- -roles={{ .role }}
- -id=$(POD_NAME)
- -region={{ .region.name }}
- -data-dir=/data
- -log-level={{ $root.Values.logLevel }}
- -control={{ include "vigil.voterURLs" $root }}
- -read-token-file=/etc/vigil/credentials/read-token
- -gossip-bind=0.0.0.0:{{ $root.Values.ports.gossip }}
- -gossip-advertise=$(POD_IP):{{ $root.Values.ports.gossip }}
- -gossip-key-file=/etc/vigil/credentials/gossip.key
- -join={{ include "vigil.gossipService" $root }}.{{ $root.Release.Namespace }}.svc.{{ $root.Values.clusterDomain }}:{{ $root.Values.ports.gossip }}
- -http=0.0.0.0:{{ $root.Values.ports.http }}
- -http-advertise=$(POD_IP):{{ $root.Values.ports.http }}
{{- include "vigil.tlsArgs" (dict "root" $root "role" .role) }}
{{- end -}}
