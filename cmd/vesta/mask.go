package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
)

// maskHelp is what mask and unmask say of the key and the check.
const maskHelp = `The key is the configuration's mask.key: from the file mask.key_file (or
VESTA_MASK_KEY_FILE), or VESTA_MASK_KEY; never from the command line. A key
file holds "slot 0 SECRET", SECRET 32 random bytes in base64 (openssl rand
-base64 32); docs/masking.md tells how to rotate it. Masks are bound to
--tenant and --kind (both empty by default): another tenant's or kind's
masks do not unmask, and --kind is the masks' prefix (ord_...).`

func newMaskCmd() *cobra.Command {
	return maskCmd(false)
}

func newUnmaskCmd() *cobra.Command {
	return maskCmd(true)
}

// maskCmd is vesta mask, or vesta unmask.
func maskCmd(unmask bool) *cobra.Command {
	var (
		tenant, kind, configFile string
		asJSON                   bool
	)
	cmd := &cobra.Command{
		Use:   "mask [--tenant T] [--kind K] [--json] ID...",
		Short: "Mask IDs into texts that hide their time, machine and count (reads stdin when no ID is given)",
		Long: `Mask IDs into public texts that hide their time, machine and count: an
optional kind prefix and 13 characters (ord_4yk3wzn2mvgn9), one a line, in
the order given; IDs come from the arguments, else from stdin, one a line.
Every ID has a mask; vesta unmask turns it back.

` + maskHelp,
	}
	if unmask {
		cmd.Use = "unmask [--tenant T] [--kind K] [--json] TEXT..."
		cmd.Short = "Unmask texts into the IDs they hide (reads stdin when no text is given)"
		cmd.Long = `Unmask texts into the IDs they hide, one unsigned decimal a line, in the
order given; texts come from the arguments, else from stdin, one a line. A
text that is no mask of the tenant and kind is refused on stderr with the
reason (not a mask, a mask of another kind, its key slot retired, or one
that decodes to an ID this deployment cannot have issued: another tenant's
or kind's mask, a retired key's, a mistyped one), and the exit status is 1.
The check of the IDs is the configuration's: the id section (or --layout,
--type, --epoch), machine.embedded_range, machine.server_range, id.max_borrow
and mask.not_before.

` + maskHelp
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		loaded, err := loadConfig(cmd, configFile, true)
		if err != nil {
			return err
		}
		ms, err := loaded.Config.Masks(nil)
		if err != nil {
			return fmt.Errorf("%w: %w", errConfig, loaded.Attribute(err))
		}
		m, err := ms.Masker(tenant, kind)
		if err != nil {
			flag := "--kind"
			if strings.Contains(err.Error(), `: tenant "`) {
				flag = "--tenant"
			}
			return usage(flag, err)
		}
		w := bufio.NewWriter(cmd.OutOrStdout())
		one := func(s string) error {
			if unmask {
				id, err := m.Unmask(s)
				if err != nil {
					return err
				}
				return writeMaskLine(w, asJSON, id, s, false)
			}
			id, err := core.ParseID(s)
			if err != nil {
				return err
			}
			return writeMaskLine(w, asJSON, id, m.Mask(id), true)
		}
		return errors.Join(eachInput(cmd, args, one), w.Flush())
	}
	fs := cmd.Flags()
	fs.StringVar(&tenant, "tenant", "", "the tenant the masks are bound to; empty: the deployment's one tenant")
	fs.StringVar(&kind, "kind", "", "the kind of ID the masks are bound to, and their prefix (1-16 letters and digits); empty: none")
	what := "ID"
	if unmask {
		what = "text"
	}
	fs.BoolVar(&asJSON, "json", false, fmt.Sprintf(`print one JSON object per %s: {"id": "decimal", "mask": "text"}`, what))
	addConfigFlag(fs, &configFile)
	conf.AddFlags(fs, "layout", "type", "epoch")
	return cmd
}

// maskLine is the --json line of mask and unmask.
type maskLine struct {
	ID   string `json:"id"`
	Mask string `json:"mask"`
}

// writeMaskLine writes the mask (or, unmasking, the ID) alone, or both as
// JSON.
func writeMaskLine(w *bufio.Writer, asJSON bool, id core.ID, text string, masking bool) error {
	var err error
	switch {
	case asJSON:
		b, _ := json.Marshal(maskLine{ID: id.String(), Mask: text})
		_, err = w.Write(append(b, '\n'))
	case masking:
		_, err = w.WriteString(text + "\n")
	default:
		_, err = w.WriteString(id.String() + "\n")
	}
	return err
}
