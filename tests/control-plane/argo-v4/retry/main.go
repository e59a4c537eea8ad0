// Command argo-retry retries workflows the way `argo retry NAME...` does in Kubernetes API mode
// (no Argo Server): through the same module's API client and its workflow service, which reset
// the failed nodes, delete their pods and write the workflow back with the same uid.
//
// cmd/argo itself cannot be built from the module proxy's copy of the module: it embeds the UI
// build output (ui/dist), which is not part of the module.
//
//	argo-retry --kubeconfig FILE -n NAMESPACE [-p NAME=VALUE]... NAME...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/argoproj/argo-workflows/v4/pkg/apiclient"
	workflowpkg "github.com/argoproj/argo-workflows/v4/pkg/apiclient/workflow"
)

// parameters collects repeated -p NAME=VALUE flags, as `argo retry -p` takes them.
type parameters []string

func (p *parameters) String() string     { return fmt.Sprint(*p) }
func (p *parameters) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var overrides parameters
	flag.Var(&overrides, "p", "input parameter to override on the original workflow spec (NAME=VALUE)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	namespace := flag.String("n", "", "namespace of the workflows")
	restartSuccessful := flag.Bool("restart-successful", false, "also restart successful nodes (with --node-field-selector)")
	nodeFieldSelector := flag.String("node-field-selector", "", "selector of nodes to reset")
	flag.Parse()
	if *namespace == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: argo-retry --kubeconfig FILE -n NAMESPACE [-p NAME=VALUE]... NAME...")
		os.Exit(2)
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig}
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	ctx, client, err := apiclient.NewClientFromOptsWithContext(context.Background(), apiclient.Opts{
		ClientConfigSupplier: func() clientcmd.ClientConfig { return config },
		LogLevel:             "warn",
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "argo-retry: %v\n", err)
		os.Exit(1)
	}
	service := client.NewWorkflowServiceClient(ctx)
	for _, name := range flag.Args() {
		retried, err := service.RetryWorkflow(ctx, &workflowpkg.WorkflowRetryRequest{
			Name:              name,
			Namespace:         *namespace,
			RestartSuccessful: *restartSuccessful,
			NodeFieldSelector: *nodeFieldSelector,
			Parameters:        overrides,
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "argo-retry: %s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Printf("%s/%s retried: uid %s, resourceVersion %s, phase %q\n", retried.Namespace,
			retried.Name, retried.UID, retried.ResourceVersion, retried.Status.Phase)
	}
}
