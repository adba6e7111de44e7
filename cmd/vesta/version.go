package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/internal/buildinfo"
)

func versionString() string {
	return fmt.Sprintf("vesta %s %s %s/%s", buildinfo.Read(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version, VCS revision and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					buildinfo.Info
					OS   string `json:"os"`
					Arch string `json:"arch"`
				}{buildinfo.Read(), runtime.GOOS, runtime.GOARCH})
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"version", "revision", "modified", "go_version", "os", "arch"}`)
	return cmd
}
