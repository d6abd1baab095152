package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
)

// runNowResult is what run-now prints with -o json|yaml.
type runNowResult struct {
	ScheduledJob string `json:"scheduledJob"`
	Namespace    string `json:"namespace"`
	// Annotation is the key set on the ScheduledJob, Token its value.
	Annotation string `json:"annotation"`
	Token      string `json:"token"`
	// Job is the name the run's Job gets (jobname.RunNow).
	Job string `json:"job"`
}

func (c *cli) runNowCmd() *cobra.Command {
	var token string
	cmd := &cobra.Command{
		Use:   "run-now SCHEDULEDJOB",
		Short: "Ask a ScheduledJob for one run now (sets the run-now annotation)",
		Long: `Sets the annotation ` + keys.AnnotationRunNow + ` on the ScheduledJob to a new token (default: the
Unix time in seconds, as docs/scheduling.md's kubectl annotate does). The controller creates one
Job for each new token, named <name>-r<8 hex digits>, respecting concurrencyPolicy and at most one
a minute; the same token twice does nothing.`,
		Example: `  kubectl platform run-now nightly-report -n reports
  kubectl platform run-now nightly-report --token "$(uuidgen)" -o json`,
		Args: args(1, "the ScheduledJob's name"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.runNow(cmd, a[0], token)
		},
	}
	cmd.Flags().StringVar(&token, "token", "", "The run-now token (default: the Unix time in seconds). Keep it short; a token used before does nothing.")
	return cmd
}

func (c *cli) runNow(cmd *cobra.Command, name, token string) error {
	cl, ns, err := c.clientIn()
	if err != nil {
		return err
	}
	if token == "" {
		token = strconv.FormatInt(c.now().Unix(), 10)
	}
	sj := &v1alpha1.ScheduledJob{}
	if err := cl.Get(cmd.Context(), types.NamespacedName{Namespace: ns, Name: name}, sj); err != nil {
		return fmt.Errorf("scheduledjob %s/%s: %w", ns, name, err)
	}
	if token == sj.Status.LastRunNowToken || token == sj.Annotations[keys.AnnotationRunNow] {
		return fmt.Errorf("token %q was used already on scheduledjob %s/%s: a token runs once; pass a new --token", token, ns, name)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, keys.AnnotationRunNow, token)
	if err := cl.Patch(cmd.Context(), sj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("setting %s on scheduledjob %s/%s: %w", keys.AnnotationRunNow, ns, name, err)
	}
	res := runNowResult{ScheduledJob: name, Namespace: ns, Annotation: keys.AnnotationRunNow, Token: token, Job: jobname.RunNow(sj, token)}
	if sj.Spec.Suspend != nil && *sj.Spec.Suspend {
		c.warn("scheduledjob %s/%s is suspended: the request is spent without a run (Warning RunNowSkipped)", ns, name)
	}
	return printReport(c, res, func(w io.Writer, res runNowResult) {
		fmt.Fprintf(w, "scheduledjob.ops.platform-operators.io/%s run-now requested: token %s, Job %s\n", res.ScheduledJob, res.Token, res.Job)
	})
}
