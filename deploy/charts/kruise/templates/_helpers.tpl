{{/* Namespace of both components. */}}
{{- define "kruise.namespace" -}}
{{- .Values.installation.namespace | default "kruise-system" -}}
{{- end -}}

{{/* An image reference from {repository, tag, digest}; the tag defaults to the appVersion. */}}
{{- define "kruise.image" -}}
{{- $img := index . 0 -}}{{- $root := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository ($img.tag | default $root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* "true" or "false": the named gate as the binaries read featureGates: its explicit value, else
AllBeta (a Beta gate) or AllAlpha (an Alpha gate) when set, else its default.
(list name featureGates) is a Beta gate on by default (KruiseDaemon);
(list name featureGates default maturity) any other, e.g. (list "ResourcesDeletionProtection"
.Values.featureGates false "Beta"): a gate off by default must not read as on. */}}
{{- define "kruise.gateEnabled" -}}
{{- $name := index . 0 -}}{{- $gates := index . 1 | default "" -}}
{{- $default := "true" -}}{{- $maturity := "Beta" -}}
{{- if gt (len .) 2 -}}{{- $default = toString (index . 2) -}}{{- $maturity = index . 3 -}}{{- end -}}
{{- $explicit := "" -}}{{- $all := "" -}}
{{- range $pair := splitList "," $gates -}}
{{- $kv := splitList "=" (trim $pair) -}}
{{- if eq (len $kv) 2 -}}
{{- if eq (trim (index $kv 0)) $name -}}{{- $explicit = lower (trim (index $kv 1)) -}}{{- end -}}
{{- if eq (trim (index $kv 0)) (printf "All%s" $maturity) -}}{{- $all = lower (trim (index $kv 1)) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if $explicit -}}{{- $explicit -}}{{- else if $all -}}{{- $all -}}{{- else -}}{{- $default -}}{{- end -}}
{{- end -}}

{{/* "true" when the policy.kruise.io/delete-protection label is served: ResourcesDeletionProtection
(Beta, default false, as in OpenKruise). */}}
{{- define "kruise.deletionProtection" -}}
{{- if eq (include "kruise.gateEnabled" (list "ResourcesDeletionProtection" .Values.featureGates false "Beta")) "true" -}}true{{- end -}}
{{- end -}}

{{/* "true" when a CRD labelled Cascading is checked for objects: DeletionProtectionForCRDCascadingGate
(Alpha, default false), forced off without ResourcesDeletionProtection as the controller does. */}}
{{- define "kruise.deletionProtectionCRDs" -}}
{{- if and (include "kruise.deletionProtection" .) (eq (include "kruise.gateEnabled" (list "DeletionProtectionForCRDCascadingGate" .Values.featureGates false "Alpha")) "true") -}}true{{- end -}}
{{- end -}}

{{/* "true" only if featureGates turns the named (Alpha) gate on: explicitly, or with AllAlpha=true
and no explicit value, as the binaries read it. */}}
{{- define "kruise.alphaGateEnabled" -}}
{{- include "kruise.gateEnabled" (list (index . 0) (index . 1) false "Alpha") -}}
{{- end -}}

{{/* Labels shared by every object of the release. */}}
{{- define "kruise.labels" -}}
app.kubernetes.io/part-of: kruise
{{- end -}}

{{/* loggingFormat, checked here so that a typo fails the install rather than the pods. */}}
{{- define "kruise.loggingFormat" -}}
{{- $f := . | default "text" -}}
{{- if not (has $f (list "text" "json")) -}}
{{- fail (printf "loggingFormat must be text or json, got %q" $f) -}}
{{- end -}}
{{- $f -}}
{{- end -}}

{{/* The controller's --feature-gates: featureGates, plus EnableExternalCerts=true when the
certificates are not kruise's (externalCerts.enabled, or a caBundle the chart writes). */}}
{{- define "kruise.controllerGates" -}}
{{- $gates := .Values.featureGates | default "" -}}
{{- if and .Values.webhook.enabled (or .Values.externalCerts.enabled .Values.webhook.caBundle) -}}
{{- if $gates -}}{{- printf "%s,EnableExternalCerts=true" $gates -}}{{- else -}}EnableExternalCerts=true{{- end -}}
{{- else -}}
{{- $gates -}}
{{- end -}}
{{- end -}}

{{/* true when kruise writes the webhook Secret and caBundles itself (managed certificates). */}}
{{- define "kruise.managedCerts" -}}
{{- if not (or .Values.externalCerts.enabled .Values.webhook.caBundle) -}}true{{- end -}}
{{- end -}}

{{/* The CRDs that convert through kruise's /convert with webhook.conversion.enabled: those whose
versions differ (NodeImage: pullSecrets[].mode is v1beta1-only; CloneSet: the strategies have two
shapes; DaemonSet: Surging, partitionedScaling and the revision's name; StatefulSet: six spec fields are v1beta1-only; SidecarSet: namespace and customVersion; the other kinds' versions
share one schema, docs/api.md). Comma-separated, as
--webhook-conversion-crds takes them. */}}
{{- define "kruise.conversionCRDs" -}}
nodeimages.apps.kruise.io,clonesets.apps.kruise.io,daemonsets.apps.kruise.io,statefulsets.apps.kruise.io,sidecarsets.apps.kruise.io
{{- end -}}

{{/* Every CRD of kruise (pkg/controller/storageversion KruiseCRDs; test/chart checks they agree). */}}
{{- define "kruise.allCRDs" -}}
containerrecreaterequests.apps.kruise.io,imagepulljobs.apps.kruise.io,imagelistpulljobs.apps.kruise.io,broadcastjobs.apps.kruise.io,advancedcronjobs.apps.kruise.io,{{ include "kruise.conversionCRDs" . }}
{{- end -}}

{{/* A hook Job running kruise-controller with args (and extra env) as kruise-conversion-hook,
placed and configured as the controller is. dict: root, name, hook, args, env. */}}
{{- define "kruise.conversionHookJob" -}}
{{- $root := .root }}{{- $m := $root.Values.manager }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .name }}
  namespace: {{ include "kruise.namespace" $root }}
  labels:
    app.kubernetes.io/name: {{ .name }}
    {{- include "kruise.labels" $root | nindent 4 }}
  annotations:
    helm.sh/hook: {{ .hook }}
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 2
  activeDeadlineSeconds: 120
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .name }}
        {{- include "kruise.labels" $root | nindent 8 }}
    spec:
      restartPolicy: Never
      serviceAccountName: kruise-conversion-hook
      {{- if $m.hostNetwork }}
      hostNetwork: true
      {{- end }}
      {{- if $m.dnsPolicy }}
      dnsPolicy: {{ $m.dnsPolicy }}
      {{- else if $m.hostNetwork }}
      dnsPolicy: ClusterFirstWithHostNet
      {{- end }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
      {{- with $m.nodeAffinity }}
      affinity:
        nodeAffinity:
          {{- toYaml . | nindent 10 }}
      {{- end }}
      {{- with $m.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $m.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ index .args 0 }}
          image: {{ include "kruise.image" (list $m.image $root) }}
          imagePullPolicy: {{ $m.imagePullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          env:
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            {{- with .env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with $m.extraEnvs }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
{{- end -}}

{{/* The runbook base URL that monitoring/alerts.yaml is written with; the PrometheusRule
replaces it with monitoring.prometheusRule.runbookBaseURL. */}}
{{- define "kruise.defaultRunbookBaseURL" -}}
https://github.com/nodekruise/kruise/blob/main/docs/operations.md
{{- end -}}

{{/* A PodMonitor for one component's "metrics" port. dict: root, component, honorLabels. */}}
{{- define "kruise.podMonitor" -}}
{{- $root := .root }}{{- $pm := $root.Values.monitoring.podMonitor }}
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: {{ .component }}
  namespace: {{ $pm.namespace | default (include "kruise.namespace" $root) }}
  labels:
    app.kubernetes.io/name: {{ .component }}
    {{- include "kruise.labels" $root | nindent 4 }}
    {{- with $pm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  namespaceSelector:
    matchNames:
      - {{ include "kruise.namespace" $root }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .component }}
  podMetricsEndpoints:
    - port: metrics
      path: /metrics
      {{- with $pm.interval }}
      interval: {{ . }}
      {{- end }}
      {{- with $pm.scrapeTimeout }}
      scrapeTimeout: {{ . }}
      {{- end }}
      {{- if .honorLabels }}
      honorLabels: true
      {{- end }}
      relabelings:
        - action: replace
          sourceLabels: [__meta_kubernetes_pod_node_name]
          targetLabel: node
        - action: replace
          targetLabel: component
          replacement: {{ .component }}
{{- end -}}

{{/* prometheus.io/* pod annotations (monitoring.scrapeAnnotations). dict: root, port. */}}
{{- define "kruise.scrapeAnnotations" -}}
{{- if .root.Values.monitoring.scrapeAnnotations -}}
annotations:
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ .port | quote }}
  prometheus.io/path: /metrics
{{- end -}}
{{- end -}}

{{/* The pod labels and annotations kruise writes and decides by, as CEL lists
(pkg/apis/apps/v1beta1 ReservedPodLabels and ReservedPodAnnotations; test/chart checks they agree). */}}
{{- define "kruise.reservedPodLabels" -}}
['apps.kruise.io/specified-delete', 'lifecycle.apps.kruise.io/state', 'apps.kruise.io/cloneset-instance-id', 'controller-revision-hash']
{{- end -}}
{{- define "kruise.reservedPodAnnotations" -}}
['apps.kruise.io/inplace-update-state', 'inplace-update-state', 'apps.kruise.io/inplace-update-grace', 'inplace-update-grace', 'lifecycle.apps.kruise.io/timestamp']
{{- end -}}
