package propagation

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Op is one kind of write.
type Op string

// The writes a plan can hold. Conflict and Held are not writes: Conflict reports a target we may
// not touch, Held one whose copy is being deleted and held there (a finalizer), which nothing but
// its going away can change.
const (
	OpCreate   Op = "create"
	OpUpdate   Op = "update"
	OpReplace  Op = "replace"
	OpDelete   Op = "delete"
	OpRelease  Op = "release"
	OpConflict Op = "conflict"
	OpHeld     Op = "held"
	// OpOrphan marks a copy kept for a returning source (keys.AnnotationOrphaned); Want is the
	// copy with the mark, a metadata change only.
	OpOrphan Op = "orphan"
)

// Action is one step of a plan.
type Action struct {
	Op Op
	// Key is the copy's namespace and name.
	Key types.NamespacedName
	// Want is the desired copy (create, update, replace).
	Want *corev1.Secret
	// Current is the live Secret (update, replace, delete, release, conflict).
	Current *corev1.Secret
	// Desired is, for an update, the wanted copy itself (Want is it merged onto Current): exactly
	// the fields the owner writes, which a server-side apply sends.
	Desired *corev1.Secret
	// Adopt marks an update of a copy without a valid proof that already holds the wanted data and
	// type: it may only be written where no other field manager holds a field it sets (never by
	// force).
	Adopt bool
	// Message explains a conflict or a held copy.
	Message string
}

// Plan is what a SecretSync needs done, and the counts its status reports.
type Plan struct {
	Actions []Action
	// Desired copies, and those already in step.
	Desired, InStep int
}

// Lookup finds a live copy (one carrying the owner's label, any value) by key, or nil.
type Lookup func(types.NamespacedName) *corev1.Secret

// Owner is who manages a set of copies: the label that marks them and its value, and the kind
// of owner, for messages.
type Owner struct {
	Label, Name, Kind string
	// Proven reports whether a live copy carrying the label is provably the manager's (a valid
	// keys.AnnotationOwnership, see Prover). Nil takes every labelled copy as proven: for tests
	// of the plan alone; the controllers always set it.
	Proven func(*corev1.Secret) bool
	// Expendable reports whether an unproven copy that is not wanted holds nothing anyone could
	// lose: its data and type are what the owner would write under its name. Nil: none is.
	Expendable func(*corev1.Secret) bool
	// SourceGone reports whether a copy that is not wanted is so only because its source is gone
	// (the source the spec names is missing; the copy's namespace still a target). Under
	// PolicyOrphan such a copy is kept, ours, and marked (OpOrphan), to follow the source when it
	// returns. Nil: none is.
	SourceGone func(*corev1.Secret) bool
}

func (o Owner) proven(s *corev1.Secret) bool { return o.Proven == nil || o.Proven(s) }

func (o Owner) expendable(s *corev1.Secret) bool { return o.Expendable != nil && o.Expendable(s) }

// SecretSyncOwner is the Owner of a SecretSync's copies.
func SecretSyncOwner(name string) Owner {
	return Owner{Label: keys.LabelSecretSync, Name: name, Kind: "SecretSync"}
}

// The deletion policies (spec.deletionPolicy's values): what becomes of a copy no longer wanted.
const (
	// PolicyDelete deletes it (the default).
	PolicyDelete = "Delete"
	// PolicyOrphan releases it: our label and annotations go, the Secret stays (Released).
	PolicyOrphan = "Orphan"
	// PolicyAsRecorded follows each copy's own keys.AnnotationDeletionPolicy: for the copies of a
	// SecretSync that is gone, whose spec can no longer be read.
	PolicyAsRecorded = ""
)

// DeletionPolicy is the policy a spec gives: its value, or PolicyDelete when it is empty (the
// API's default, for objects stored before the field had one).
func DeletionPolicy(spec string) string {
	return cmp.Or(spec, PolicyDelete)
}

// removal is the write that removes copy o under policy.
func removal(o *corev1.Secret, policy string) Op {
	if policy == PolicyAsRecorded {
		policy = o.Annotations[keys.AnnotationDeletionPolicy]
	}
	if policy == PolicyOrphan {
		return OpRelease
	}
	return OpDelete
}

// ComputeFor compares the wanted copies of owner (a SecretSync or a CopyRequest) with the live
// ones and returns the writes that close the gap. owned are the live copies labelled with the
// owner; a copy that is owned but no longer wanted is deleted or released per policy
// (PolicyDelete, PolicyOrphan, or PolicyAsRecorded). A wanted copy whose name is taken by
// another owner's copy is a conflict: the first one keeps it.
//
// A labelled copy without a valid ownership proof (owner.Proven) is never updated, replaced,
// deleted or released: it is a conflict, reported, unless nothing in it could be lost. A wanted
// one whose data and type already are the wanted ones, and that an update can bring in step, is
// adopted (the update writes the proof and leaves the rest as it was); one that only a replace
// could bring in step (immutable, another type) is a conflict, as a replace would lose its
// labels, annotations, owner references and uid. An unwanted one that owner.Expendable says holds
// the owner's data is removed. Copies made by versions before the proof are adopted or removed
// so; anything else a tenant labelled stays.
//
// A wanted copy that is being deleted (a deletion timestamp: a finalizer holds it) is Held: no
// write can help (an update would be lost with it, a delete is already under way, a create meets
// the name taken), so none is planned until it is gone; its deletion is the event that brings the
// create.
func ComputeFor(owner Owner, want []*corev1.Secret, live Lookup, owned []*corev1.Secret, policy string) Plan {
	p := Plan{Desired: len(want)}
	wanted := make(map[types.NamespacedName]bool, len(want))
	for _, w := range want {
		key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
		wanted[key] = true
		if a, inStep := Judge(owner, key, live(key), w); inStep {
			p.InStep++
		} else {
			p.Actions = append(p.Actions, a)
		}
	}
	for _, o := range owned {
		key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
		if wanted[key] || o.DeletionTimestamp != nil {
			continue
		}
		if !owner.proven(o) && !owner.expendable(o) {
			p.Actions = append(p.Actions, Action{Op: OpConflict, Key: key, Current: o, Message: unprovenMessage(o, key, owner, unprovenData)})
			continue
		}
		if policy == PolicyOrphan && owner.proven(o) && owner.SourceGone != nil && owner.SourceGone(o) {
			if o.Annotations[keys.AnnotationOrphaned] == "" {
				marked := o.DeepCopy()
				metav1.SetMetaDataAnnotation(&marked.ObjectMeta, keys.AnnotationOrphaned, ContentDigest(o))
				p.Actions = append(p.Actions, Action{Op: OpOrphan, Key: key, Want: marked, Current: o})
			}
			continue
		}
		p.Actions = append(p.Actions, Action{Op: removal(o, policy), Key: key, Current: o})
	}
	slices.SortStableFunc(p.Actions, func(a, b Action) int {
		return cmp.Or(strings.Compare(a.Key.Namespace, b.Key.Namespace), strings.Compare(a.Key.Name, b.Key.Name))
	})
	return p
}

// Judge is the plan's decision for one wanted copy w under key, cur the live object there (nil:
// none): the write it needs, or inStep. With w nil (the wanted copy is not known: its source could
// not be read) it decides what needs no source (a create, a name another owner holds, a copy held
// Terminating) and returns an Action with no Op otherwise.
func Judge(owner Owner, key types.NamespacedName, cur, w *corev1.Secret) (a Action, inStep bool) {
	switch {
	case cur == nil:
		return Action{Op: OpCreate, Key: key, Want: w}, false
	case cur.Labels[owner.Label] != owner.Name:
		return Action{Op: OpConflict, Key: key, Current: cur, Message: conflictMessage(cur, key, owner)}, false
	case w == nil:
		if cur.DeletionTimestamp != nil {
			return Action{Op: OpHeld, Key: key, Current: cur, Message: heldMessage(cur, key, owner)}, false
		}
		return Action{Key: key, Current: cur}, false
	case !owner.proven(cur) && (!typeMatches(cur, w) || !dataMatches(cur, w)):
		return Action{Op: OpConflict, Key: key, Current: cur, Message: unprovenMessage(cur, key, owner, unprovenData)}, false
	case cur.DeletionTimestamp != nil:
		return Action{Op: OpHeld, Key: key, Current: cur, Message: heldMessage(cur, key, owner)}, false
	case !owner.proven(cur) && NeedsReplace(cur, w):
		// Adoption leaves the rest of the object as it was; a replace would not.
		return Action{Op: OpConflict, Key: key, Current: cur, Message: unprovenMessage(cur, key, owner, "only deleting and re-creating it could bring it in step (it is immutable, or of another type)")}, false
	case cur.Annotations[keys.AnnotationOrphaned] != "" && cur.Annotations[keys.AnnotationOrphaned] != ContentDigest(cur) && !SameContent(cur, w):
		// Kept while its source was gone, and changed since: someone's now. A copy that already
		// holds the returning source's content loses nothing by being written: the manager's own
		// apply brought it there and died (or conflicted) before the marker was removed.
		return Action{Op: OpConflict, Key: key, Current: cur, Message: orphanChangedMessage(cur, key, owner)}, false
	case InStep(cur, w):
		return Action{}, true
	case NeedsReplace(cur, w):
		return Action{Op: OpReplace, Key: key, Want: w, Current: cur}, false
	}
	return Action{Op: OpUpdate, Key: key, Want: Merged(cur, w), Current: cur, Desired: w, Adopt: !owner.proven(cur)}, false
}

// conflictMessage says who holds the target cur that owner wants.
func conflictMessage(cur *corev1.Secret, key types.NamespacedName, owner Owner) string {
	if n := cur.Labels[keys.LabelSecretSync]; n != "" {
		return fmt.Sprintf("%s %s is managed by SecretSync %q", KindName(cur), key, n)
	}
	if n := cur.Labels[keys.LabelCopyRequest]; n != "" {
		return fmt.Sprintf("%s %s is managed by CopyRequest %q", KindName(cur), key, n)
	}
	return fmt.Sprintf("%s %s is not managed by this %s", KindName(cur), key, owner.Kind)
}

// unprovenData is why an unproven copy whose data is not the wanted data is not adopted.
const unprovenData = "its data is not the source's"

// unprovenMessage says why the copy cur that owner's label names is left untouched: why it is
// not adopted.
func unprovenMessage(cur *corev1.Secret, key types.NamespacedName, owner Owner, why string) string {
	return fmt.Sprintf("%s %s carries the label of %s %q but no valid ownership proof (%s), and %s: it is left untouched; remove the label %s from it, or delete it, to let the copy in",
		KindName(cur), key, owner.Kind, owner.Name, keys.AnnotationOwnership, why, owner.Label)
}

// heldMessage says that the copy cur is being deleted and held (a finalizer keeps it).
func heldMessage(cur *corev1.Secret, key types.NamespacedName, owner Owner) string {
	return fmt.Sprintf("%s %s, this %s's copy, is being deleted and held there (a finalizer keeps it); nothing is written to it, and the copy is created again once it is gone: remove the finalizer to end this",
		KindName(cur), key, owner.Kind)
}

// orphanChangedMessage says why the copy cur, kept while its source was gone, does not follow it.
func orphanChangedMessage(cur *corev1.Secret, key types.NamespacedName, owner Owner) string {
	return fmt.Sprintf("%s %s was kept when its source went away (deletionPolicy Orphan) and its data has changed since: it is left as it is; delete it to have the copy made again",
		KindName(cur), key)
}
