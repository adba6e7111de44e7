package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/assemble"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
)

// seqTimeout bounds one store command of `vesta seq`.
const seqTimeout = 10 * time.Second

func newSeqCmd() *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:   "seq",
		Short: "Create and list segment sequence tags in the store (segment.store)",
		Long: `Create and list the tags of segment sequences (Leaf's segment mode) in the
store that segment.store names: Leaf's leaf_alloc table (mysql) or Redis.
The store comes from the configuration of vesta serve: the YAML file
(--config or VESTA_CONFIG), then VESTA_* variables, e.g.
VESTA_SEGMENT_STORE=mysql VESTA_SEGMENT_DSN='user:pw@tcp(db:3306)/leaf'.`,
	}
	cmd.PersistentFlags().StringVar(&configFile, "config", "", "YAML configuration file (default $"+conf.EnvFile+")")
	cmd.AddCommand(newSeqCreateCmd(&configFile), newSeqListCmd(&configFile))
	return cmd
}

func newSeqCreateCmd(configFile *string) *cobra.Command {
	var start, step int64
	var desc string
	cmd := &cobra.Command{
		Use:   "create TAG --start N --step S [--desc D]",
		Short: "Create a tag: its first number is N, its ranges S numbers long",
		Long: `Create a tag in the store, as Leaf's INSERT INTO leaf_alloc(biz_tag, max_id,
step, description): the tag issues N first (Leaf's max_id), and each range
reserved from the store holds S numbers (the dynamic step grows from S, up to
segment.max_step, when ranges are used up quickly). With the mysql store the
table is created first if missing. Running servers serve the tag within
segment.refresh_tags, or at once on a miss. TAG is 1-128 characters of
A-Z a-z 0-9 _ . : -.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			tag := args[0]
			if err := segment.ValidTag(tag); err != nil {
				return usage("TAG", err)
			}
			switch {
			case !cmd.Flags().Changed("step"):
				return fmt.Errorf("%w: --step is required: how many numbers one range holds (Leaf's step), e.g. 1000", errUsage)
			case start < 1 || start > math.MaxInt64/2:
				return fmt.Errorf("%w: --start %d; want 1-%d", errUsage, start, int64(math.MaxInt64/2))
			case step < 1 || step > math.MaxInt32:
				return fmt.Errorf("%w: --step %d; want 1-%d", errUsage, step, math.MaxInt32)
			case len(desc) > segment.MaxDescriptionLen:
				return fmt.Errorf("%w: --desc is %d bytes; want at most %d", errUsage, len(desc), segment.MaxDescriptionLen)
			}
			store, ctx, done, err := seqStore(cmd.Context(), *configFile)
			if err != nil {
				return err
			}
			defer done()
			if ms, ok := store.(*mysqlstore.Store); ok {
				if err := ms.CreateTable(ctx); err != nil {
					return fmt.Errorf("creating the table: %w", err)
				}
			}
			err = store.Create(ctx, segment.TagInfo{Tag: tag, MaxID: start, Step: step, Description: desc})
			if errors.Is(err, segment.ErrTagExists) {
				return fmt.Errorf("tag %q exists already (vesta seq list shows it)", tag)
			}
			if errors.Is(err, segment.ErrConfig) {
				// A bound of the store itself (Redis numbers stay below 2^53).
				return fmt.Errorf("%w: --start %d, --step %d: %w", errUsage, start, step, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s: first number %d, step %d\n", tag, start, step)
			return nil
		},
	}
	cmd.Flags().Int64Var(&start, "start", 1, "the first number the tag issues (Leaf's max_id)")
	cmd.Flags().Int64Var(&step, "step", 0, "numbers per range reserved from the store (Leaf's step); required")
	cmd.Flags().StringVar(&desc, "desc", "", "description (Leaf's description), at most 256 bytes")
	return cmd
}

func newSeqListCmd(configFile *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tags of the store: max_id (the next range starts there), step, description",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, ctx, done, err := seqStore(cmd.Context(), *configFile)
			if err != nil {
				return err
			}
			defer done()
			tags, err := store.Tags(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				type row struct {
					Tag         string `json:"tag"`
					MaxID       string `json:"max_id"`
					Step        int64  `json:"step"`
					Description string `json:"description"`
					Updated     string `json:"updated,omitempty"`
				}
				rows := make([]row, 0, len(tags))
				for _, t := range tags {
					rows = append(rows, row{t.Tag, fmt.Sprint(t.MaxID), t.Step, t.Description, formatUpdated(t.Updated)})
				}
				b, err := json.Marshal(rows)
				if err != nil {
					return err
				}
				_, err = out.Write(printableJSON(append(b, '\n')))
				return err
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TAG\tMAX_ID\tSTEP\tUPDATED\tDESCRIPTION")
			for _, t := range tags {
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", printable(t.Tag, ""), t.MaxID, t.Step, formatUpdated(t.Updated), printable(t.Description, ""))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array (max_id as a string)")
	return cmd
}

func formatUpdated(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// seqStore opens the store of the configuration, which must name one, and
// a context of ctx bounded by seqTimeout for the command's calls; done
// closes both.
func seqStore(ctx context.Context, configFile string) (segment.Store, context.Context, func(), error) {
	loaded, err := conf.Load(conf.Options{File: configFile})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if !loaded.Config.Segment.Enabled() {
		return nil, nil, nil, fmt.Errorf(`%w: segment.store is "" (off): set it to mysql or redis in the config file or VESTA_SEGMENT_STORE`, errUsage)
	}
	st, err := assemble.OpenSegmentStore(loaded.Config.Segment)
	if errors.Is(err, assemble.ErrConfig) {
		return nil, nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, seqTimeout)
	return st, ctx, func() { cancel(); st.Close() }, nil
}
