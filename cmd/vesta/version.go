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
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}
