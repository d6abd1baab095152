package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// Verdicts of why: one word for scripts, a sentence for people.
const (
	VerdictInStep            = "InStep"
	VerdictMissing           = "Missing"
	VerdictOutOfStep         = "OutOfStep"
	VerdictConflict          = "Conflict"
	VerdictHeld              = "Held"
	VerdictNotATarget        = "NotATarget"
	VerdictNamespaceNotFound = "NamespaceNotFound"
	VerdictBlocked           = "Blocked"
	VerdictNoSource          = "NoSource"
	VerdictUnknown           = "Unknown"
)

// whyReport is what why prints: the verdict, each copy's, and what it was read from.
type whyReport struct {
	SecretSync string `json:"secretSync"`
	Namespace  string `json:"namespace"`
	Verdict    string `json:"verdict"`
	Message    string `json:"message"`
	// Ready is the SecretSync's Ready condition as the controller last wrote it.
	Ready  *metav1.Condition `json:"ready,omitempty"`
	Copies []copyReport      `json:"copies,omitempty"`
	// Notes say what could not be read or may be stale.
	Notes  []string    `json:"notes,omitempty"`
	Events []eventLine `json:"events,omitempty"`
}

// copyReport is one copy the namespace should hold.
type copyReport struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	Message string `json:"message"`
	Exists  bool   `json:"exists"`
	// ManagedBy is the copy's LabelSecretSync (or "CopyRequest <name>"), empty when it has none.
	ManagedBy string `json:"managedBy,omitempty"`
	// OwnershipProof: the copy carries the manager's proof annotation. The CLI cannot check it
	// (the key is the manager's), the manager does.
	OwnershipProof bool `json:"ownershipProof,omitempty"`
	// SourceDigest and CopyDigest are propagation.DataDigest of the data the copy should hold
	// and of the data it holds (empty when unknown).
	SourceDigest string `json:"sourceDigest,omitempty"`
	CopyDigest   string `json:"copyDigest,omitempty"`
	// Failure is the controller's status.failures entry for this copy, if any.
	Failure *v1alpha1.TargetFailure `json:"failure,omitempty"`
}

// eventLine is one Event, newest first.
type eventLine struct {
	// Time is when the API server recorded the Event: its creation time, which the server sets on
	// create whatever the client sends (an Event's own times, and even its managed fields'
	// times, are the writer's to choose).
	Time    metav1.Time `json:"time"`
	Type    string      `json:"type"`
	Reason  string      `json:"reason"`
	Object  string      `json:"object"`
	Message string      `json:"message"`
}

// whyFacts is what why read from the cluster; diagnose decides from it alone.
type whyFacts struct {
	ss *v1alpha1.SecretSync
	// nsName is the namespace asked about, ns the Namespace; nil when it does not exist.
	nsName string
	ns     *corev1.Namespace
	// sources are the matching sources (ConfigMaps as envelopes), read whole; sourcesErr says why
	// they could not be read (then sources is nil).
	sources    []*corev1.Secret
	sourcesErr string
	// live holds the namespace's objects under the names the copies have, and the copies this
	// SecretSync labels there (nil entries: absent).
	live map[string]*corev1.Secret
}

func (c *cli) whyCmd() *cobra.Command {
	var managerNS string
	cmd := &cobra.Command{
		Use:   "why SECRETSYNC -n NAMESPACE",
		Short: "Say why a SecretSync's copy in a namespace is missing or out of step",
		Long: `Reads the SecretSync (spec, status, Ready, failures), the namespace, the source(s) and the copy,
and the Events of the SecretSync (in the manager's namespace) and of the copy, then says what the
controller does with that namespace: InStep, Missing, OutOfStep, Conflict (a Secret the add-on does
not manage holds the name), Held (the copy is Terminating), NotATarget (the selector,
includeNamespaces or excludeNamespaces leave the namespace out), NamespaceNotFound, NoSource, or
Blocked (the SecretSync copies nothing: a bad spec, a missing source namespace). The decision is
the controller's own code (copyplan.NotATarget, copyplan.Wanted, propagation.Judge).
Without the right to read the source, the data is not compared and the status decides.`,
		Example: `  kubectl platform why harbor-pull -n team-a
  kubectl platform why ca-bundle -n team-b -o json`,
		Args: args(1, "the SecretSync's name"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if !c.namespaceSet() {
				return usagef("name the target namespace with -n")
			}
			cl, ns, err := c.clientIn()
			if err != nil {
				return err
			}
			rep, err := c.why(cmd.Context(), cl, a[0], ns, managerNS)
			if err != nil {
				return err
			}
			if err := printReport(c, rep, func(w io.Writer, rep whyReport) {
				whyText(w, rep)
				whyTail(w, rep)
			}); err != nil {
				return err
			}
			if rep.Verdict == VerdictNamespaceNotFound {
				// docs/cli.md: an object not found exits 1, so a script sees a mistyped namespace.
				return fmt.Errorf("namespace %s not found", ns)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&managerNS, "manager-namespace", "platform-operators-system", "The manager's namespace, where the SecretSync's Events are recorded.")
	return cmd
}

// why reads the facts and decides.
func (c *cli) why(ctx context.Context, cl client.Client, name, namespace, managerNS string) (whyReport, error) {
	ss := &v1alpha1.SecretSync{}
	if err := cl.Get(ctx, types.NamespacedName{Name: name}, ss); err != nil {
		return whyReport{}, fmt.Errorf("secretsync %s: %w", name, err)
	}
	f := whyFacts{ss: ss, nsName: namespace, live: map[string]*corev1.Secret{}}
	var notes []string
	ns := &corev1.Namespace{}
	if err := cl.Get(ctx, types.NamespacedName{Name: namespace}, ns); err == nil {
		f.ns = ns
	} else if !apierrors.IsNotFound(err) {
		return whyReport{}, fmt.Errorf("namespace %s: %w", namespace, err)
	}
	configMaps := ss.Spec.Source.Kind == v1alpha1.CopyKindConfigMap
	f.sources, f.sourcesErr = readSources(ctx, cl, ss, configMaps)
	if f.ns != nil {
		for _, n := range copyplan.CopyNames(ss, f.sources) {
			s, err := readObject(ctx, cl, configMaps, types.NamespacedName{Namespace: namespace, Name: n})
			if err != nil {
				return whyReport{}, err
			}
			f.live[n] = s
		}
		// The copies this SecretSync labels there, whatever their name (a source renamed, a
		// selector that matches no more).
		labelled, err := listObjects(ctx, cl, configMaps, namespace, client.MatchingLabels{keys.LabelSecretSync: ss.Name})
		if err != nil {
			notes = append(notes, fmt.Sprintf("cannot list the copies in %s: %v", namespace, err))
		}
		for _, s := range labelled {
			if _, ok := f.live[s.Name]; !ok {
				f.live[s.Name] = s
			}
		}
	}
	rep := diagnose(f)
	rep.Notes = append(rep.Notes, notes...)
	kind := "Secret"
	if configMaps {
		kind = "ConfigMap"
	}
	events, err := readEvents(ctx, cl, managerNS, "SecretSync", ss.Name, 5)
	if err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("cannot read the SecretSync's Events in %s (--manager-namespace): %v", managerNS, err))
	}
	rep.Events = events
	for _, cp := range rep.Copies {
		ev, err := readEvents(ctx, cl, namespace, kind, cp.Name, 5)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("cannot read the Events in %s: %v", namespace, err))
			break
		}
		rep.Events = append(rep.Events, ev...)
	}
	sort.SliceStable(rep.Events, func(i, j int) bool { return rep.Events[j].Time.Before(&rep.Events[i].Time) })
	return rep, nil
}

// diagnose is the verdict from the facts, in the order the controller decides: the namespace,
// a blocked SecretSync, the target rules, the sources, then each copy's plan.
func diagnose(f whyFacts) whyReport {
	ss := f.ss
	rep := whyReport{SecretSync: ss.Name, Namespace: f.nsName, Ready: meta.FindStatusCondition(ss.Status.Conditions, copyplan.ConditionReady)}
	if f.ns == nil {
		rep.Verdict, rep.Message = VerdictNamespaceNotFound, "the namespace does not exist"
		return rep
	}
	if ss.Status.ObservedGeneration < ss.Generation {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the status describes generation %d, the spec is at %d: the manager has not handled the last change yet (is it running?)", ss.Status.ObservedGeneration, ss.Generation))
	}
	if r := rep.Ready; r != nil && copyplan.Blocks(r.Reason) {
		rep.Verdict, rep.Message = VerdictBlocked, fmt.Sprintf("the SecretSync copies and removes nothing: Ready is %s, %s: %s", r.Status, r.Reason, r.Message)
		return rep
	}
	if why := copyplan.NotATarget(ss, f.ns); why != "" {
		rep.Verdict, rep.Message = VerdictNotATarget, why
		for _, s := range f.live {
			if s != nil && s.Labels[keys.LabelSecretSync] == ss.Name {
				rep.Copies = append(rep.Copies, copyReport{Name: s.Name, Verdict: VerdictNotATarget, Exists: true, ManagedBy: ss.Name,
					Message: fmt.Sprintf("a copy of this SecretSync is still here: it goes per deletionPolicy (%s)", propagation.DeletionPolicy(string(ss.Spec.DeletionPolicy)))})
			}
		}
		return rep
	}
	if f.sourcesErr == "" && len(f.sources) == 0 {
		rep.Verdict = VerdictNoSource
		if ss.Spec.Source.Name != "" {
			rep.Message = fmt.Sprintf("the source %s/%s does not exist (or is being deleted, or is withheld): copies are removed per deletionPolicy and return when it does", ss.Spec.Source.Namespace, ss.Spec.Source.Name)
		} else {
			rep.Message = fmt.Sprintf("no object in %s matches spec.source: nothing to copy", ss.Spec.Source.Namespace)
		}
		return rep
	}
	if f.sourcesErr != "" {
		rep.Notes = append(rep.Notes, "the source could not be read ("+f.sourcesErr+"): the copy's data is not compared; the controller's status decides")
	}
	if r := rep.Ready; r != nil && r.Reason == copyplan.ReasonSourceWithheld {
		rep.Notes = append(rep.Notes, "Ready says SourceWithheld: "+r.Message)
	}
	for _, name := range copyplan.CopyNames(ss, f.sources) {
		rep.Copies = append(rep.Copies, judgeCopy(f, name))
	}
	// A copy labelled by this SecretSync under a name no source gives any more.
	for name, s := range f.live {
		if s != nil && s.Labels[keys.LabelSecretSync] == ss.Name && f.sourcesErr == "" && !slices.Contains(copyplan.CopyNames(ss, f.sources), name) {
			rep.Copies = append(rep.Copies, copyReport{Name: name, Verdict: VerdictOutOfStep, Exists: true, ManagedBy: ss.Name,
				Message: fmt.Sprintf("no source gives this name any more: the copy goes per deletionPolicy (%s)", propagation.DeletionPolicy(string(ss.Spec.DeletionPolicy)))})
		}
	}
	sort.SliceStable(rep.Copies, func(i, j int) bool { return rep.Copies[i].Name < rep.Copies[j].Name })
	rep.Verdict, rep.Message = VerdictInStep, fmt.Sprintf("every copy is in step (%d)", len(rep.Copies))
	if i := slices.IndexFunc(rep.Copies, func(cp copyReport) bool { return cp.Verdict != VerdictInStep }); i >= 0 {
		rep.Verdict, rep.Message = rep.Copies[i].Verdict, rep.Copies[i].Name+": "+rep.Copies[i].Message
	}
	return rep
}

// judgeCopy decides one copy as the controller's plan does: the wanted copy from the source
// (copyplan.Wanted), the live one, and propagation.Judge's action for it.
func judgeCopy(f whyFacts, name string) copyReport {
	ss, live := f.ss, f.live[name]
	cp := copyReport{Name: name, Exists: live != nil}
	for i := range ss.Status.Failures {
		if fl := ss.Status.Failures[i]; fl.Namespace == f.ns.Name && fl.Name == name {
			cp.Failure = &fl
		}
	}
	if live != nil {
		cp.ManagedBy = live.Labels[keys.LabelSecretSync]
		if r, ok := live.Labels[keys.LabelCopyRequest]; ok && cp.ManagedBy == "" {
			cp.ManagedBy = "CopyRequest " + r
		}
		cp.OwnershipProof = live.Annotations[keys.AnnotationOwnership] != ""
		cp.CopyDigest = propagation.DataDigest(live.Data)
	}
	var want *corev1.Secret
	for _, src := range f.sources {
		if w, _ := copyplan.Wanted(ss, src, f.ns.Name); w.Name == name {
			want = w
		}
	}
	if want != nil {
		cp.SourceDigest = propagation.DataDigest(want.Data)
		// The manager signs the wanted copy with a key the CLI does not hold: take the live
		// copy's proof as the one it would write.
		if live != nil && live.Annotations[keys.AnnotationOwnership] != "" {
			want.Annotations[keys.AnnotationOwnership] = live.Annotations[keys.AnnotationOwnership]
		}
	}
	// The CLI cannot check a proof (the key is the manager's): one present counts as valid.
	owner := propagation.SecretSyncOwner(ss.Name)
	owner.Proven = func(s *corev1.Secret) bool { return s.Annotations[keys.AnnotationOwnership] != "" }
	a, inStep := propagation.Judge(owner, types.NamespacedName{Namespace: f.ns.Name, Name: name}, live, want)
	switch {
	case inStep:
		cp.Verdict, cp.Message = VerdictInStep, "in step: data, type and the SecretSync's metadata are the source's"
		if !cp.OwnershipProof {
			cp.Message += " (no ownership proof: the manager adopts it)"
		}
	case a.Op == propagation.OpCreate:
		cp.Verdict, cp.Message = VerdictMissing, "there is no copy yet"
		if cp.Failure != nil {
			cp.Verdict, cp.Message = failureVerdict(cp.Failure.Reason), cp.Failure.Reason+": "+cp.Failure.Message
		} else if r := meta.FindStatusCondition(ss.Status.Conditions, copyplan.ConditionReady); r != nil {
			cp.Message += fmt.Sprintf("; Ready is %s, %s: %s", r.Status, r.Reason, r.Message)
		}
	case a.Op == propagation.OpConflict:
		cp.Verdict, cp.Message = VerdictConflict, a.Message
	case a.Op == propagation.OpHeld:
		cp.Verdict, cp.Message = VerdictHeld, fmt.Sprintf("%s (Terminating since %s, finalizers [%s])", a.Message, live.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(live.Finalizers, ", "))
	case a.Op == "":
		// Not decidable without the source.
		cp.Verdict, cp.Message = VerdictUnknown, "the copy is this SecretSync's; its data cannot be compared without the source"
		if cp.Failure != nil {
			cp.Verdict, cp.Message = failureVerdict(cp.Failure.Reason), cp.Failure.Reason+": "+cp.Failure.Message
		}
	default:
		cp.Verdict, cp.Message = VerdictOutOfStep, fmt.Sprintf("the manager's next pass would %s it: %s", a.Op, differences(live, want))
		if cp.Failure != nil {
			cp.Message += "; it failed before: " + cp.Failure.Reason + ": " + cp.Failure.Message
		}
	}
	return cp
}

// differences names what differs between the live copy and the wanted one.
func differences(live, want *corev1.Secret) string {
	var d []string
	if live.Type != want.Type {
		d = append(d, fmt.Sprintf("type %s, wants %s", live.Type, want.Type))
	}
	if propagation.DataDigest(live.Data) != propagation.DataDigest(want.Data) {
		d = append(d, "data differs from the source's")
	}
	for k, v := range want.Labels {
		if live.Labels[k] != v {
			d = append(d, "label "+k)
		}
	}
	for k, v := range want.Annotations {
		if live.Annotations[k] != v {
			d = append(d, "annotation "+k)
		}
	}
	if len(d) == 0 {
		return "its metadata differs"
	}
	sort.Strings(d[min(len(d), 2):])
	return strings.Join(d, "; ")
}

func failureVerdict(reason string) string {
	switch reason {
	case copyplan.ReasonConflict:
		return VerdictConflict
	case copyplan.ReasonHeld:
		return VerdictHeld
	}
	return VerdictMissing
}

// readSources reads the sources spec.source picks, whole (ConfigMaps as envelopes), or says
// why it could not.
func readSources(ctx context.Context, cl client.Client, ss *v1alpha1.SecretSync, configMaps bool) ([]*corev1.Secret, string) {
	src := ss.Spec.Source
	var sel labels.Selector
	if src.Selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(src.Selector); err != nil {
			return nil, err.Error()
		}
	}
	var all []*corev1.Secret
	if src.Name != "" {
		s, err := readObject(ctx, cl, configMaps, types.NamespacedName{Namespace: src.Namespace, Name: src.Name})
		if err != nil {
			return nil, err.Error()
		}
		if s != nil {
			all = append(all, s)
		}
	} else {
		var err error
		if all, err = listObjects(ctx, cl, configMaps, src.Namespace, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, err.Error()
		}
	}
	var out []*corev1.Secret
	for _, s := range all {
		if propagation.SourceMatches(s, src.Name, sel, src.Type) && !propagation.IsCopy(s) {
			out = append(out, s)
		}
	}
	return out, ""
}

// readObject reads a Secret, or a ConfigMap as its envelope; nil when it does not exist.
func readObject(ctx context.Context, cl client.Client, configMap bool, key types.NamespacedName) (*corev1.Secret, error) {
	var err error
	if configMap {
		cm := &corev1.ConfigMap{}
		if err = cl.Get(ctx, key, cm); err == nil {
			return propagation.FromConfigMap(cm), nil
		}
	} else {
		s := &corev1.Secret{}
		if err = cl.Get(ctx, key, s); err == nil {
			return s, nil
		}
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return nil, fmt.Errorf("reading %s: %w", key, err)
}

// listObjects lists Secrets, or ConfigMaps as envelopes.
func listObjects(ctx context.Context, cl client.Client, configMap bool, namespace string, opts ...client.ListOption) ([]*corev1.Secret, error) {
	opts = append(opts, client.InNamespace(namespace))
	var out []*corev1.Secret
	if configMap {
		l := &corev1.ConfigMapList{}
		if err := cl.List(ctx, l, opts...); err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, propagation.FromConfigMap(&l.Items[i]))
		}
		return out, nil
	}
	l := &corev1.SecretList{}
	if err := cl.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}

// readEvents reads the last Events (at most limit) about kind/name in namespace, newest first by
// the time the API server recorded (eventLine.Time): the times in an Event are its writer's to
// choose, and five Events dated in the future by a tenant about its own copy pushed the
// manager's out of view.
func readEvents(ctx context.Context, cl client.Client, namespace, kind, name string, limit int) ([]eventLine, error) {
	l := &corev1.EventList{}
	if err := cl.List(ctx, l, client.InNamespace(namespace), client.MatchingFields{"involvedObject.kind": kind, "involvedObject.name": name}); err != nil {
		return nil, err
	}
	var out []eventLine
	for _, e := range l.Items {
		out = append(out, eventLine{Time: e.CreationTimestamp, Type: e.Type, Reason: e.Reason, Object: kind + "/" + name, Message: e.Message})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[j].Time.Before(&out[i].Time) })
	return out[:min(len(out), limit)], nil
}

// whyText writes the report for people: the verdict first, then each copy (whyTail: the notes
// and Events).
func whyText(w io.Writer, rep whyReport) {
	fmt.Fprintf(w, "SecretSync %s, namespace %s: %s\n  %s\n", rep.SecretSync, orDash(rep.Namespace), rep.Verdict, rep.Message)
	if r := rep.Ready; r != nil {
		fmt.Fprintf(w, "Ready (all namespaces): %s, %s: %s\n", r.Status, r.Reason, r.Message)
	}
	// Each table aligns on its own.
	if len(rep.Copies) > 0 {
		w := printers.GetNewTabWriter(w)
		defer w.Flush()
		fmt.Fprintln(w, "\nCOPY\tVERDICT\tEXISTS\tMANAGED BY\tDATA\tMESSAGE")
		for _, cp := range rep.Copies {
			data := "-"
			switch {
			case cp.SourceDigest != "" && cp.CopyDigest != "" && cp.SourceDigest == cp.CopyDigest:
				data = "= source"
			case cp.SourceDigest != "" && cp.CopyDigest != "":
				data = "differs"
			}
			fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%s\t%s\n", cp.Name, cp.Verdict, cp.Exists, orDash(cp.ManagedBy), data, cp.Message)
		}
	}
}

// whyTail writes the notes and the Events of a why report.
func whyTail(w io.Writer, rep whyReport) {
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	if len(rep.Events) > 0 {
		w := printers.GetNewTabWriter(w)
		defer w.Flush()
		fmt.Fprintln(w, "\nCREATED\tTYPE\tREASON\tOBJECT\tMESSAGE")
		for _, e := range rep.Events {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Type, e.Reason, e.Object, oneLine(e.Message, 120))
		}
	}
}
