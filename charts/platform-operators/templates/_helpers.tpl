{{/*
Expand the name of the chart.
*/}}
{{- define "platform-operators.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Create a default fully qualified app name.
We truncate at 63 chars because some Kubernetes name fields are limited to this (by the DNS naming spec).
If release name contains chart name it will be used as a full name.
*/}}
{{- define "platform-operators.fullname" -}}
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

{{/*
Create chart name and version as used by the chart label.
*/}}
{{- define "platform-operators.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The values added since the first release (0.1.0), each at the path where it first appeared, with
today's default (the same as values.yaml's). `helm upgrade --reuse-values` renders the new chart
with the old release's values only (the old chart's values.yaml and the user's), never the new
values.yaml, so a release installed from an older chart lacks these keys. Add every new value here
in the commit that adds it to values.yaml; tests/chart/upgrade_test.go fails otherwise.
*/}}
{{- define "platform-operators.addedValues" -}}
enabled: true
namespaceOverride: ""
commonLabels: {}
global.imagePullSecrets: []
revisionHistoryLimit: 10
deploymentStrategy: {}
serviceAccount.automount: true
admissionPolicies:
  enabled: true
  validationActions: [Deny]
  otherManagers: []
  allowedSourceNamespaces: []
admissionPolicies.allowedSourceNamespaces: []
flowControl:
  enabled: true
  nominalConcurrencyShares: 20
  lendablePercent: 50
  borrowingLimitPercent: 100
  queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}
  matchingPrecedence: 1000
jobs: {podsStuckAfter: 2m}
jobImage.digest: ""
tenantPodSecurity: {enforce: restricted, version: latest, warn: restricted, audit: restricted}
storageClass.allowSharedData: false
managerPullSecret: {create: false, name: "", registry: "", username: "", password: ""}
prometheusRule:
  enabled: false
  namespace: ""
  labels: {}
  annotations: {}
  selector: ""
  disabledAlerts: []
  additionalRules: []
  scheduledJobNoSuccessGraceSeconds: 3600
  renderMode: skipIfMissing
prometheusRule.scheduledJobNoSuccessGraceSeconds: 3600
prometheusRule.renderMode: skipIfMissing
grafanaDashboard:
  enabled: false
  namespace: ""
  labelKey: grafana_dashboard
  labelValue: "1"
  folder: ""
  folderAnnotation: grafana_folder
  annotations: {}
  renderMode: alwaysRender
grafanaDashboard.renderMode: alwaysRender
podDisruptionBudget.unhealthyPodEvictionPolicy: AlwaysAllow
tests.image.digest: ""
podSecurityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile: {type: RuntimeDefault}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  privileged: false
  capabilities: {drop: [ALL]}
hostNetwork: false
dnsPolicy: ""
dnsConfig: {}
terminationGracePeriodSeconds: 45
livenessProbe: {periodSeconds: 10, timeoutSeconds: 15, failureThreshold: 8}
readinessProbe: {initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 15, failureThreshold: 3}
extraVolumes: []
extraVolumeMounts: []
extraObjects: []
metrics.perObjectLimit: 1000
deploymentAnnotations: {}
serviceAnnotations: {}
serviceMonitor.renderMode: skipIfMissing
serviceMonitor.namespace: ""
crds.annotations: {}
extraContainers: []
extraInitContainers: []
{{- end }}

{{/*
Sets each value of addedValues that .Values lacks to its default, so the templates render a release
reused from an older chart (`--reuse-values`) as today's defaults would. A key that is there, even
false or empty, is left as it is, and so are the keys inside it: `podSecurityContext.fsGroup: null`
still drops fsGroup (Helm removes a key set to null, so a null on one of these paths itself brings
its default back). Every template calls it first: `{{- include "platform-operators.values" . }}`.
It changes .Values in place (the templates share it) and prints nothing.
*/}}
{{- define "platform-operators.values" -}}
{{- range $path, $default := include "platform-operators.addedValues" . | fromYaml }}
{{- $keys := splitList "." $path }}
{{- $parent := $.Values }}
{{- range initial $keys }}
{{- if not (kindIs "map" (get $parent .)) }}
{{- $_ := set $parent . dict }}
{{- end }}
{{- $parent = get $parent . }}
{{- end }}
{{- if not (hasKey $parent (last $keys)) }}
{{- $_ := set $parent (last $keys) $default }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Common labels, carried by every object of the chart but the pods that are not the manager
(those carry nonManagerPodLabels). They include managerSelectorLabels, so the manager's pods
match every selector of the chart.
*/}}
{{- define "platform-operators.labels" -}}
{{- with include "platform-operators.commonLabels" . | trim }}{{ . }}{{ "\n" }}{{ end -}}
helm.sh/chart: {{ include "platform-operators.chart" . }}
{{ include "platform-operators.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: platform-operators
app.kubernetes.io/component: manager
{{- end }}

{{/*
The Deployment's spec.selector. It is immutable: `helm upgrade` from an earlier chart version fails
if these keys change, so never add or remove one (select with managerSelectorLabels instead). No
other pod of the chart may carry both labels, or the Deployment's ReplicaSet could adopt it.
*/}}
{{- define "platform-operators.selectorLabels" -}}
app.kubernetes.io/name: {{ include "platform-operators.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels that select the manager's pods and nothing else: the Deployment's selector labels and the
manager component. The Service, ServiceMonitor and PodDisruptionBudget select with these.
*/}}
{{- define "platform-operators.managerSelectorLabels" -}}
{{ include "platform-operators.selectorLabels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/*
Labels of the chart's pods that are not the manager (the `helm test` pod): the common labels
without app.kubernetes.io/name, so neither the Deployment's selector (which would let its
ReplicaSet adopt the pod) nor a Service's selects them, and a component of their own.
Call with (dict "context" $ "component" "test").
*/}}
{{- define "platform-operators.nonManagerPodLabels" -}}
{{- if eq .component "manager" }}
{{- fail "nonManagerPodLabels: the component manager is the Deployment's" }}
{{- end }}
{{- with .context -}}
{{- with include "platform-operators.commonLabels" . | trim }}{{ . }}{{ "\n" }}{{ end -}}
helm.sh/chart: {{ include "platform-operators.chart" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: platform-operators
{{- end }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
Name of the ServiceAccount the manager runs as.
*/}}
{{- define "platform-operators.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "platform-operators.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Manager image: <registry>/<repository>:<tag>, or @<digest> when image.digest is set.
global.imageRegistry wins over image.registry; an empty registry means no prefix.
*/}}
{{- define "platform-operators.image" -}}
{{- $registry := .Values.image.registry }}
{{- with .Values.global }}
{{- if .imageRegistry }}
{{- $registry = .imageRegistry }}
{{- end }}
{{- end }}
{{- $repository := .Values.image.repository }}
{{- if $registry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository (toString (default .Chart.AppVersion .Values.image.tag)) }}
{{- end }}
{{- end }}

{{/*
Value of the manager's --controllers flag: "*" (every controller that is on by default)
followed by one entry per optional controller, "name" to enable it or "-name" to disable it.
Add a line here for each new optional controller.
*/}}
{{- define "platform-operators.controllers" -}}
{{- $controllers := list "*" }}
{{- $controllers = append $controllers (ternary "podwatcher" "-podwatcher" (.Values.podWatcher.enabled | default false)) }}
{{- $controllers = append $controllers (ternary "secretsync" "-secretsync" (.Values.secretSync.enabled | default false)) }}
{{- $controllers = append $controllers (ternary "at" "-at" (.Values.at.enabled | default false)) }}
{{- $controllers = append $controllers (ternary "scheduledjob" "-scheduledjob" (.Values.scheduledJob.enabled | default false)) }}
{{- join "," $controllers }}
{{- end }}

{{/*
The controllers whose RBAC rules the chart grants, as YAML: name -> enabled (manager: the manager's
own rules, always). The names are those of files/rbac/controllers/ and --controllers.
*/}}
{{- define "platform-operators.enabledControllers" -}}
manager: true
podwatcher: {{ .Values.podWatcher.enabled | default false }}
secretsync: {{ .Values.secretSync.enabled | default false }}
at: {{ .Values.at.enabled | default false }}
scheduledjob: {{ .Values.scheduledJob.enabled | default false }}
{{- end }}

{{/*
Image an At's command runs in when the At names none: <registry>/<repository>:<tag>, or
@<digest> when jobImage.digest is set.
global.imageRegistry wins over jobImage.registry (a Harbor proxy for every image of the chart).
*/}}
{{- define "platform-operators.jobImage" -}}
{{- $registry := .Values.jobImage.registry }}
{{- with .Values.global }}
{{- if .imageRegistry }}
{{- $registry = .imageRegistry }}
{{- end }}
{{- end }}
{{- $repository := .Values.jobImage.repository }}
{{- if $registry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository }}
{{- end }}
{{- if .Values.jobImage.digest }}
{{- printf "%s@%s" $repository .Values.jobImage.digest }}
{{- else }}
{{- printf "%s:%s" $repository (toString .Values.jobImage.tag) }}
{{- end }}
{{- end }}

{{/*
Namespace of the pull secret made from values: pullSecret.namespace, else the default SecretSync's
source namespace (where the Secrets that are spread to tenants live).
*/}}
{{- define "platform-operators.pullSecretNamespace" -}}
{{- .Values.pullSecret.namespace | default .Values.secretSync.default.sourceNamespace }}
{{- end }}

{{/*
Name of the SecretSync that spreads the pull secret to every namespace (pullSecret.sync).
*/}}
{{- define "platform-operators.pullSecretSyncName" -}}
{{- .Values.pullSecret.sync.name | default (printf "%s-pull-secret" (include "platform-operators.fullname" .)) }}
{{- end }}

{{/*
Name of the manager's own pull secret (managerPullSecret).
*/}}
{{- define "platform-operators.managerPullSecretName" -}}
{{- .Values.managerPullSecret.name | default (printf "%s-pull" (include "platform-operators.fullname" .)) }}
{{- end }}

{{/*
The manager pod's imagePullSecrets (a YAML list): global.imagePullSecrets and imagePullSecrets,
plus managerPullSecret when the chart creates it. Never pullSecret: that is the tenants' credential.
*/}}
{{- define "platform-operators.imagePullSecrets" -}}
{{- $secrets := list }}
{{- /* global.imagePullSecrets (a parent chart's, names or {name: ...}) first, then imagePullSecrets. */}}
{{- range concat ((.Values.global | default dict).imagePullSecrets | default list) (.Values.imagePullSecrets | default list) }}
{{- $name := . }}
{{- if kindIs "map" . }}
{{- $name = .name }}
{{- end }}
{{- if not $name }}
{{- fail "global.imagePullSecrets and imagePullSecrets entries need a name: a string or {name: ...}" }}
{{- end }}
{{- if not (has (dict "name" $name) $secrets) }}
{{- $secrets = append $secrets (dict "name" $name) }}
{{- end }}
{{- end }}
{{- if .Values.managerPullSecret.create }}
{{- $name := include "platform-operators.managerPullSecretName" . }}
{{- if not (has (dict "name" $name) $secrets) }}
{{- $secrets = append $secrets (dict "name" $name) }}
{{- end }}
{{- end }}
{{- toYaml $secrets }}
{{- end }}

{{/*
Image of the `helm test` pod, which runs `/manager probe`: the manager image, unless
tests.image.repository names another image holding /manager (a mirror, say), as
<registry>/<repository>:<tag> with the tag defaulting to appVersion (@<digest> with
tests.image.digest); global.imageRegistry wins
over tests.image.registry.
*/}}
{{- define "platform-operators.testImage" -}}
{{- if not .Values.tests.image.repository }}
{{- include "platform-operators.image" . }}
{{- else }}
{{- $registry := .Values.tests.image.registry }}
{{- with .Values.global }}
{{- if .imageRegistry }}
{{- $registry = .imageRegistry }}
{{- end }}
{{- end }}
{{- $repository := .Values.tests.image.repository }}
{{- if $registry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository }}
{{- end }}
{{- if .Values.tests.image.digest }}
{{- printf "%s@%s" $repository .Values.tests.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository (toString (default .Chart.AppVersion .Values.tests.image.tag)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Default Role rules of a tenant: a developer's set in its own namespace. Read/write of workloads
and their config; read of logs, events and ReplicaSets. No Secrets (the namespace holds the
tenant's token and the copies SecretSync puts there; a pod can still mount them) and never
SecretSyncs (cluster-scoped; a tenant must not aim one at another namespace).
*/}}
{{- define "platform-operators.tenantDefaultRules" -}}
{{- $rw := list "get" "list" "watch" "create" "update" "patch" "delete" }}
{{- $ro := list "get" "list" "watch" }}
- apiGroups: [""]
  resources: [pods, services, configmaps, persistentvolumeclaims]
  verbs: {{ toJson $rw }}
- apiGroups: [""]
  resources: [pods/log, events, serviceaccounts]
  verbs: {{ toJson $ro }}
- apiGroups: [apps]
  resources: [deployments, statefulsets]
  verbs: {{ toJson $rw }}
- apiGroups: [apps]
  resources: [replicasets]
  verbs: {{ toJson $ro }}
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: {{ toJson $rw }}
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: {{ toJson $rw }}
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: {{ toJson $rw }}
- apiGroups: [ops.platform-operators.io]
  resources: [ats, scheduledjobs, copyrequests]
  verbs: {{ toJson $rw }}
- apiGroups: [ops.platform-operators.io]
  resources: [ats/status, scheduledjobs/status, copyrequests/status]
  verbs: {{ toJson $ro }}
{{- end }}

{{/*
The manager's RBAC scope, "cluster" or "namespaced", after checking the values that go with it:
namespaced needs namespaces, and the pod watcher may only watch namespaces of the list.
*/}}
{{- define "platform-operators.rbacScope" -}}
{{- $scope := .Values.rbac.scope | default "cluster" }}
{{- if eq $scope "namespaced" }}
{{- if not .Values.rbac.namespaces }}
{{- fail "rbac.scope=namespaced needs rbac.namespaces, the namespaces the manager works in, and it is empty: set it (values: `rbac: {scope: namespaced, namespaces: [team-a, team-b]}`, or `--set 'rbac.namespaces={team-a,team-b}'`), or set rbac.scope=cluster to let the manager work in every namespace" }}
{{- end }}
{{- range .Values.podWatcher.namespaces }}
{{- if not (has . $.Values.rbac.namespaces) }}
{{- fail (printf "podWatcher.namespaces holds %q, which is not in rbac.namespaces: with rbac.scope=namespaced the manager can only watch those" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- $scope }}
{{- end }}

{{/*
The namespaces a manager of rbac.scope=namespaced works in, as a JSON list: rbac.namespaces and,
with SecretSync on, the source namespaces of the SecretSyncs the chart has the manager keep
applied (the default's, the pull secret's), which it must read. Each gets the manager's Role,
and the list is --watch-namespaces.
*/}}
{{- define "platform-operators.managedNamespaces" -}}
{{- $out := .Values.rbac.namespaces | default list }}
{{- if .Values.secretSync.enabled }}
{{- if .Values.secretSync.default.enabled }}
{{- $out = append $out .Values.secretSync.default.sourceNamespace }}
{{- end }}
{{- if .Values.pullSecret.sync.enabled }}
{{- $out = append $out (include "platform-operators.pullSecretNamespace" .) }}
{{- end }}
{{- end }}
{{- $out | uniq | toJson }}
{{- end }}

{{/*
The rules given (a list of PolicyRules) without cluster-scoped resources, which a Role cannot
grant; a rule left with no resource is dropped. Add a resource here when a controller starts to
use another cluster-scoped kind (the chart tests compare this list with the CRDs' scopes and
check that the Roles still grant what the controllers need).
*/}}
{{- define "platform-operators.namespacedRules" -}}
{{- $clusterScoped := list "namespaces" "nodes" "persistentvolumes" "storageclasses" "customresourcedefinitions" "clusterroles" "clusterrolebindings" "secretsyncs" "secretsyncs/status" "secretsyncs/finalizers" "validatingadmissionpolicies" "validatingadmissionpolicybindings" }}
{{- $out := list }}
{{- range . }}
{{- $resources := list }}
{{- range .resources }}
{{- if not (has . $clusterScoped) }}
{{- $resources = append $resources . }}
{{- end }}
{{- end }}
{{- if $resources }}
{{- $out = append $out (set (deepCopy .) "resources" $resources) }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/*
What a manager of rbac.scope=namespaced running SecretSync still needs cluster-wide, from the
rules given (the secretsync controller's generated ones): SecretSyncs and their status (the kind
is cluster-scoped, so no Role can grant it) and get on the admission policies it checks its own
policy with. Namespaces are left out: in namespaced mode the manager reads none (it takes
--watch-namespaces as the namespaces), so it needs nothing on any namespace it is not given a
Role in, and no Secret or ServiceAccount outside them.
*/}}
{{- define "platform-operators.secretSyncClusterRules" -}}
{{- $keep := list "secretsyncs" "secretsyncs/status" "validatingadmissionpolicies" "validatingadmissionpolicybindings" }}
{{- $out := list }}
{{- range . }}
{{- $resources := list }}
{{- range .resources }}
{{- if has . $keep }}
{{- $resources = append $resources . }}
{{- end }}
{{- end }}
{{- if $resources }}
{{- $out = append $out (set (deepCopy .) "resources" $resources) }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/*
The namespace of every namespaced object of the release: namespaceOverride, else the release's
(for umbrella charts that install this one into another namespace). Helm still keeps the
release record in the release namespace.
*/}}
{{- define "platform-operators.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
commonLabels, one per line (or nothing), put before the chart's own labels on every object. They
must not set a label the chart selects or owns.
*/}}
{{- define "platform-operators.commonLabels" -}}
{{- range $key, $value := .Values.commonLabels }}
{{- if or (hasPrefix "app.kubernetes.io/" $key) (eq $key "helm.sh/chart") }}
{{- fail (printf "commonLabels must not set %s: the chart sets it (and selects its pods by the app.kubernetes.io labels)" $key) }}
{{- end }}
{{ $key }}: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/*
The user name the API server gives the manager (its ServiceAccount's), as admission policies and
FlowSchemas see it.
*/}}
{{- define "platform-operators.managerUsername" -}}
{{- printf "system:serviceaccount:%s:%s" (include "platform-operators.namespace" .) (include "platform-operators.serviceAccountName" .) }}
{{- end }}

{{/*
"true" when the cluster serves ValidatingAdmissionPolicy v1 (Kubernetes >= 1.30, or the API listed
in Capabilities.APIVersions), else empty. `helm template` needs --kube-version to say so.
*/}}
{{- define "platform-operators.admissionPoliciesServed" -}}
{{- if or (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version) (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy") }}true{{ end }}
{{- end }}

{{/*
A list of strings as a CEL list literal: ['a', 'b']. The strings are Kubernetes names (validated by
the schema), so they hold no quote to escape.
*/}}
{{- define "platform-operators.celStringList" -}}
{{- $quoted := list }}
{{- range . }}
{{- $quoted = append $quoted (printf "'%s'" .) }}
{{- end }}
{{- printf "[%s]" (join ", " $quoted) }}
{{- end }}

{{/*
Whether an optional monitoring object is rendered, by its renderMode (external-secrets' modes):
`skipIfMissing` renders it only when the cluster serves `api` (an unknown kind would fail the
install), `failIfMissing` fails the render when it does not, `alwaysRender` renders it without
looking (`helm template` in a GitOps pipeline, or the CRDs applied in the same sync). Prints "true"
or nothing; fails on an unknown mode. Call with
(dict "context" $ "value" "prometheusRule" "mode" $mode "api" "monitoring.coreos.com/v1/PrometheusRule").
*/}}
{{- define "platform-operators.renderMode" -}}
{{- $served := .context.Capabilities.APIVersions.Has .api }}
{{- if not (has .mode (list "skipIfMissing" "failIfMissing" "alwaysRender")) }}
{{- fail (printf "%s.renderMode %q is not one of skipIfMissing, failIfMissing, alwaysRender" .value .mode) }}
{{- end }}
{{- if and (eq .mode "failIfMissing") (not $served) }}
{{- fail (printf "%s.enabled: the cluster does not serve %s (install its CRD first, or set %s.renderMode to skipIfMissing or alwaysRender)" .value .api .value) }}
{{- end }}
{{- if or $served (eq .mode "alwaysRender") }}true{{ end }}
{{- end }}
