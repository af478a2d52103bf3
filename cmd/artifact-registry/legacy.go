package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/legacy/proxy"
	"github.com/artifact-registry/artifact-registry/legacy/service"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// legacySetup is the serve wiring of the registry:2 migration: proxy mode
// for the OCI routes and, with --legacy-migrate, the migration service.
// The zero value (proxy mode off) adds nothing.
type legacySetup struct {
	oci      *oci.LegacyOptions
	service  *service.Service
	metrics  *service.Metrics
	storage  *objstore.Store
	periodic []*river.PeriodicJob
}

func newLegacySetup(ctx context.Context, cfg *config.Legacy, st *store.Store, log *slog.Logger) (*legacySetup, error) {
	ls := &legacySetup{}
	if !cfg.Enabled() {
		return ls, nil
	}
	rules, err := mapping.Load(cfg.MappingFile)
	if err != nil {
		return nil, fmt.Errorf("legacy mapping: %w", err)
	}
	ls.metrics = service.NewMetrics(st)
	ls.oci = &oci.LegacyOptions{
		URL: cfg.URL, Username: cfg.Username, Password: cfg.Password,
		Router:     proxy.New(st, rules, cfg.Local),
		RetryAfter: cfg.RetryAfter,
		Observe:    ls.metrics.ObserveProxy,
	}
	if !cfg.ServiceEnabled {
		return ls, nil
	}
	ls.storage, err = objstore.Open(ctx, cfg.StorageURL)
	if err != nil {
		return nil, fmt.Errorf("open legacy storage: %w", err)
	}
	ls.service, err = service.New(st, ls.storage.Bucket(), ls.metrics, service.Config{
		MaxConcurrency: cfg.MaxConcurrency, Logger: log,
	})
	if err != nil {
		_ = ls.storage.Close()
		return nil, err
	}
	return ls, nil
}

// register adds the service's workers and queue to the River config.
func (ls *legacySetup) register(workers *river.Workers, queues map[string]river.QueueConfig) {
	if ls.service == nil {
		return
	}
	ls.periodic = ls.service.Register(workers)
	for k, v := range ls.service.Queues() {
		queues[k] = v
	}
}

func (ls *legacySetup) collectors() []prometheus.Collector {
	if ls.metrics == nil {
		return nil
	}
	return ls.metrics.Collectors()
}

func (ls *legacySetup) Close() {
	if ls.storage != nil {
		_ = ls.storage.Close()
	}
}
