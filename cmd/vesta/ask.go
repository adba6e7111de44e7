package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// serverAsk is the flags of a command that asks a running server over its
// REST listener (status, capacity, explain --holder): where, with which
// token, within what time.
type serverAsk struct {
	target, token, tokenFile string
	timeout                  time.Duration
	insecure                 bool
}

// register adds the flags; path is the route --url may name in full.
func (a *serverAsk) register(fs *pflag.FlagSet, path string) {
	fs.StringVar(&a.target, "url", defaultStatusURL, "the server's REST listener (or the full URL of its "+path+")")
	fs.StringVar(&a.tokenFile, "token-file", "", "file holding the REST token (rest.token), trailing newline trimmed")
	fs.StringVar(&a.token, "token", "", "the REST token itself; visible in the process list: prefer --token-file or $"+envToken)
	fs.DurationVar(&a.timeout, "timeout", 3*time.Second, "deadline of the whole request")
	fs.BoolVar(&a.insecure, "insecure", false, "do not verify the server's TLS certificate (a local check of rest.tls)")
}

// apiError is the REST server's error document.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// get asks the server for path (the --url's own path when it names one,
// unless fixed) and returns the body of a 200 answer. name prefixes the
// errors: the server cannot be reached, or answers with an error (its code
// and message when it sent the API's error document).
func (a *serverAsk) get(cmd *cobra.Command, name, path string, fixed bool) (*url.URL, []byte, error) {
	u, err := parseGetFlags(a.target, a.timeout)
	if err != nil {
		return nil, nil, err
	}
	if fixed || u.Path == "" || u.Path == "/" {
		p, err := url.Parse(path)
		if err != nil {
			return nil, nil, err
		}
		u.Path, u.RawPath, u.RawQuery = p.Path, p.RawPath, p.RawQuery
	}
	tok, err := statusToken(cmd, a.token, a.tokenFile)
	if err != nil {
		return nil, nil, err
	}
	resp, body, err := get(cmd.Context(), u.String(), tok, a.timeout, a.insecure, 1<<20)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // without the URL, said once here
	}
	if err != nil {
		return u, nil, fmt.Errorf("%s: %s: the server cannot be reached: %w", name, u, err)
	}
	if resp.StatusCode != 200 {
		var e apiError
		if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
			return u, body, fmt.Errorf("%s: %s: %s: %s: %s", name, u, resp.Status, e.Error.Code, printable(e.Error.Message, ""))
		}
		return u, body, fmt.Errorf("%s: %s: %s: %q", name, u, resp.Status, clipBody(body))
	}
	return u, body, nil
}

// documentCmd completes cmd (its Use, Short and Long set) into a command
// of no arguments, with the flags of serverAsk and --json, that asks a
// running server for path's JSON document as get does, decodes it into a
// D and prints it: as the server sent it with --json, else through write.
// what names the document in the error of an answer that is not one.
// judge is the command's outcome once the document is printed: nil, or
// why the server is not well, u being the URL asked.
func documentCmd[D any](cmd *cobra.Command, path, what string, write func(io.Writer, D) error, judge func(u *url.URL, d D) error) *cobra.Command {
	var (
		ask    serverAsk
		asJSON bool
	)
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		name := cmd.Name()
		u, body, err := ask.get(cmd, name, path, false)
		if err != nil {
			return err
		}
		var d D
		if err := json.Unmarshal(body, &d); err != nil {
			return fmt.Errorf("%s: %s: the answer is not %s: %w", name, u, what, err)
		}
		if asJSON {
			_, err = cmd.OutOrStdout().Write(printableJSON(append(bytes.TrimRight(body, "\n"), '\n')))
		} else {
			err = write(cmd.OutOrStdout(), d)
		}
		if err != nil {
			return err
		}
		return judge(u, d)
	}
	ask.register(cmd.Flags(), path)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the "+path+" document")
	return cmd
}
