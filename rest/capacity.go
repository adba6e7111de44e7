package rest

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/internal/capacity"
)

// CapacityFunc reports the server's capacity for GET /v1/capacity: years
// left in the time field, the machine-ID pools, the sequence's ceiling and
// the segment tags (package internal/capacity's Tracker.Report, which
// vesta serve wires). ctx bounds its read of the lease store.
type CapacityFunc func(ctx context.Context) capacity.Report

// capacityTimeout bounds the store read of one GET /v1/capacity, as
// fleetTimeout does /v1/fleet's.
const capacityTimeout = 1500 * time.Millisecond

// GET /v1/capacity
func (s *Server) apiCapacity(c echo.Context) error {
	var r capacity.Report
	if s.cfg.Capacity != nil {
		ctx, cancel := context.WithTimeout(c.Request().Context(), min(capacityTimeout, s.cfg.RequestTimeout))
		r = s.cfg.Capacity(ctx)
		cancel()
	} else {
		r = capacity.Static(s.gen, time.Now())
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, r)
}
