{{- define "chime.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "chime.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "chime.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "chime.secret" -}}
{{- default (include "chime.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{- define "chime.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{- define "chime.env" -}}
- name: CHIME_DATABASE_DRIVER
  value: {{ .Values.database.driver | quote }}
- name: CHIME_DATABASE_DSN
  valueFrom:
    secretKeyRef:
      name: {{ include "chime.secret" . }}
      key: dsn
- name: CHIME_API_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "chime.secret" . }}
      key: token
- name: CHIME_API_ADDR
  value: "0.0.0.0:8080"
- name: CHIME_SHUTDOWN_GRACE
  value: "{{ .Values.shutdownGraceSeconds }}s"
- name: CHIME_LOG_FORMAT
  value: json
{{- range $k, $v := .Values.env }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}
