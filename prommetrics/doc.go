// Package prommetrics exports what vesta's library packages measure as
// Prometheus metrics, for the programs that want them. embed, client and
// machineid keep their measures as plain stats (core.Generator.Stats,
// machineid.Lease.Stats, client.Client.Stats), so that a program that
// does not import this package links no Prometheus client (nor its
// protobuf); this package registers collectors that read those stats when
// scraped, as go-redis's extra/redisprometheus reads a pool's:
//
//	is, err := embed.Open(ctx, cfg)
//	...
//	err = prommetrics.RegisterIssuer(prometheus.DefaultRegisterer, is)
//
// Issuing pays nothing for it: nothing is counted on an ID's path that
// the generator does not count already.
//
// The series, by what registers them:
//
//	RegisterIssuer    vesta_generator_* (NewGeneratorCollector),
//	                  vesta_ids_issued_total{method="embedded"} and the
//	                  lease's vesta_machine_*{range="embedded"}
//	RegisterClient    vesta_client_calls_total{server,result},
//	                  vesta_client_breaker_state{server}, vesta_client_method,
//	                  vesta_client_prefetch_buffered,
//	                  vesta_client_fallback_machine_id and _ready, the
//	                  fallback's IDs as vesta_ids_issued_total{method="embedded"}
//	                  and its lease's vesta_machine_*{range="embedded"},
//	                  vesta_ceiling_waits_total and vesta_ceiling_wait_seconds
//	                  {method="central"}
//	RegisterLease     vesta_machine_lease_state{range,state}, vesta_machine_id,
//	                  vesta_machine_lease_renew_seconds,
//	                  vesta_machine_lease_renew_failures_total,
//	                  vesta_machine_lease_fences_total,
//	                  vesta_machine_clock_skew_seconds,
//	                  vesta_machine_quarantine_seconds (label range)
//	RegisterBuildInfo vesta_build_info{version,revision,goversion}
//
// Series of one name and labels from several sources of one registry add
// up, as the servers' do (vesta serve registers its own through this
// package too): the IDs issued by method, the ceiling's waits by method,
// a range's lease counters (its gauges follow the lease registered last
// that is still open). The catalogue with types and labels, which the
// monitoring kit's tests hold the code to, is monitoring/metrics.txt.
package prommetrics
