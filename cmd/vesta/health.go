package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

// defaultHealthURL is /healthz on the REST listener of `vesta serve` by
// default (rest.listen, as defaultStatusURL), which the container image and
// the deploy kit keep.
var defaultHealthURL = defaultStatusURL + "/healthz"

// newHealthCmd is the container's health check: the image is built FROM
// scratch, so it has no curl or shell, and the binary probes itself.
func newHealthCmd() *cobra.Command {
	var (
		target   string
		timeout  time.Duration
		insecure bool
	)
	cmd := &cobra.Command{
		Use:   "health [--url URL]",
		Short: "Exit 0 if an HTTP GET of URL answers 2xx (a container health check)",
		Long: `Exit 0 if an HTTP GET of --url (default ` + defaultHealthURL + `)
answers with a 2xx status within --timeout, else print why and exit 1. For the
HEALTHCHECK of an image that has no curl; use /readyz to ask whether the server
can issue.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := parseGetFlags(target, timeout)
			if err != nil {
				return err
			}
			return health(cmd.Context(), u.String(), timeout, insecure, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&target, "url", defaultHealthURL, "URL to GET (/healthz: the process answers; /readyz: it can issue)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "deadline of the whole request")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "do not verify the server's TLS certificate (a local check of rest.tls)")
	return cmd
}

func health(ctx context.Context, target string, timeout time.Duration, insecure bool, out io.Writer) error {
	resp, body, err := get(ctx, target, "", timeout, insecure, 512)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("health: %s: %s: %q", target, resp.Status, body)
	}
	_, err = fmt.Fprintf(out, "%s: %s\n", target, printable(resp.Status, ""))
	return err
}

// get makes one GET of target within timeout, with the bearer token when
// not "", and reads at most limit bytes of the body. It asks the server
// itself, never a proxy from the environment; insecure skips the check of
// its TLS certificate.
func get(ctx context.Context, target, token string, timeout time.Duration, insecure bool, limit int64) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp, body, err
}

// parseGetFlags checks the --url (http or https, with a host) and
// --timeout (above 0) of health and status.
func parseGetFlags(target string, timeout time.Duration) (*url.URL, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --url %q: want an http:// or https:// URL with a host", errUsage, target)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("%w: --timeout %v: want more than 0", errUsage, timeout)
	}
	return u, nil
}
