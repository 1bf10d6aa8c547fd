// Command gitsave-apiserver serves the gitsave.dev API (CommitRequest, the Save API)
// behind the Kubernetes aggregation layer and runs the branch workers that commit and
// push.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"

	"github.com/gitsave/gitsave/pkg/apiserver"
)

func main() {
	os.Exit(cli.Run(newCommand()))
}

func newCommand() *cobra.Command {
	opts := apiserver.NewOptions()
	logging := logsapi.NewLoggingConfiguration()
	cmd := &cobra.Command{
		Use:   "gitsave-apiserver",
		Short: "Serve the gitsave.dev Save API and mirror cluster objects into Git",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := logsapi.ValidateAndApply(logging, nil); err != nil {
				return err
			}
			if err := opts.Validate(); err != nil {
				return err
			}
			cfg, err := opts.Config()
			if err != nil {
				return err
			}
			server, err := cfg.New()
			if err != nil {
				return err
			}
			return server.Run(genericapiserver.SetupSignalContext())
		},
	}
	opts.AddFlags(cmd.Flags())
	logsapi.AddFlags(logging, cmd.Flags())
	return cmd
}
