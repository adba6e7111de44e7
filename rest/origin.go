package rest

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"github.com/labstack/echo/v4"
)

// Browsers are clients too, and not only their users': any web page can
// make its visitor's browser send requests to a server that browser
// reaches, and with DNS rebinding read the answers. Two checks keep such
// requests from being answered (docs/design/browsers.md):
//
//   - The Host check, on every route but /healthz and /readyz: a
//     rebinding page reaches the server under the attacker's name, which
//     the browser sends as Host, and to which the page is then
//     same-origin (so nothing else in its requests tells them from the
//     server's own page's). The names accepted by default are those the
//     public DNS cannot point at an address (Config.AllowedHosts).
//   - The cross-site check, on the routes that issue IDs or numbers, of a
//     server without a token: a request a browser sent for another
//     site's page (<img>, <form>, fetch in no-cors mode: none of them
//     needs the answer to be readable to consume numbers) is refused.
//     Browsers say where a request comes from in Sec-Fetch-Site (over
//     HTTPS and to loopback) and Origin (cross-origin fetches, POSTs);
//     over plain HTTP to another host they say neither, so a browser's
//     request (a User-Agent beginning "Mozilla/", as every browser's
//     does) without Sec-Fetch-Site needs the header ClientHeader, which
//     a page of another origin cannot send: it needs a CORS preflight,
//     which this server never grants. Programs (curl, Go, Java, generated
//     OpenAPI clients) send none of these headers and pass unchanged.
//
// With a token the cross-site check is moot: those routes need
// Authorization, which a browser never adds to another site's request.

// ClientHeader is the header that lets a browser page of the server's own
// origin call the issuing routes of a server without a token where the
// browser does not send Sec-Fetch-Site (plain HTTP to a host that is not
// loopback, older browsers). Any value will do; the page at / sends it.
const ClientHeader = "Vesta-Client"

// privateSuffixes are name suffixes the public DNS never delegates
// (RFC 6761's .localhost, mDNS's .local, which Kubernetes' cluster.local
// is under, ICANN's .internal, RFC 8375's .home.arpa): no attacker can
// point a name under them at an address.
var privateSuffixes = []string{".localhost", ".local", ".internal", ".home.arpa"}

// hostPolicy is which Host headers the server answers.
type hostPolicy struct {
	any      bool            // "*" listed
	names    map[string]bool // listed names and addresses, canonical
	suffixes []string        // ".example.com" of a listed "*.example.com"
	// wide: not bound to loopback (or bound where Serve cannot see), so
	// also any address, single-label names, names under privateSuffixes
	// and the machine's own name.
	wide     bool
	hostname string // os.Hostname, canonical; "" if unknown

	lastOK atomic.Pointer[string] // the last Host header allowed (allowsHeader)
}

// newHostPolicy is the policy of listed (Config.AllowedHosts, valid) for a
// server listening on addr; nil addr is unknown (Handler served by another
// server), which takes the wide default.
func newHostPolicy(listed []string, addr net.Addr) *hostPolicy {
	p := &hostPolicy{names: map[string]bool{}, wide: true}
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		p.wide = false
	}
	if h, err := os.Hostname(); err == nil {
		p.hostname = canonicalHost(h)
	}
	for _, h := range listed {
		switch h = canonicalHost(h); {
		case h == "*":
			p.any = true
		case strings.HasPrefix(h, "*."):
			p.suffixes = append(p.suffixes, h[1:])
		default:
			p.names[h] = true
		}
	}
	return p
}

// canonicalHost is the host of a Host header or a listed entry: the port
// and IPv6 brackets dropped, lower-cased, without a trailing dot, and an
// address in its canonical form (IPv4-mapped IPv6 as IPv4).
func canonicalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	} else {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}

// allows reports whether the server answers Host host (canonical).
func (p *hostPolicy) allows(host string) bool {
	// No Host at all (HTTP/1.0) never comes from a browser.
	if host == "" || p.any || p.names[host] || hasSuffix(host, p.suffixes) {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		// An address is looked up nowhere: no rebinding through it.
		return p.wide || a.IsLoopback()
	}
	return p.wide && (!strings.Contains(host, ".") || host == p.hostname || hasSuffix(host, privateSuffixes))
}

// misdirected is the 421 of a Host p does not allow.
func misdirected(host string, p *hostPolicy) *apiError {
	return &apiError{status: http.StatusMisdirectedRequest, code: codeMisdirected,
		message: fmt.Sprintf("Host %q is not a name of this server: add it to rest.allowed_hosts if it is (%s)", clip(host), p.describe())}
}

// allowsHeader reports whether the server answers a request whose Host
// header is h. The last header allowed is remembered, so that the common
// case (every request naming the server alike) is one comparison, without
// canonicalizing (which allocates) or matching again.
func (p *hostPolicy) allowsHeader(h string) bool {
	if last := p.lastOK.Load(); last != nil && *last == h {
		return true
	}
	if !p.allows(canonicalHost(h)) {
		return false
	}
	kept := h // h itself stays on the stack: only a miss allocates
	p.lastOK.Store(&kept)
	return true
}

// describe says what the policy accepts, for the 421's message.
func (p *hostPolicy) describe() string {
	if p.wide {
		return "accepted besides it: IP addresses, localhost, single-label names, this machine's name, names under .localhost, .local, .internal, .home.arpa"
	}
	return "on a loopback listener, accepted besides it: localhost, *.localhost, loopback addresses"
}

func hasSuffix(host string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// checkAllowedHost is Validate's check of one Config.AllowedHosts entry.
func checkAllowedHost(h string) error {
	if h == "*" {
		return nil
	}
	if strings.Contains(h, "/") {
		return fmt.Errorf("a URL or path; list the host alone")
	}
	name, wildcard := strings.CutPrefix(h, "*.")
	addr := name
	if strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]") {
		addr = addr[1 : len(addr)-1]
	}
	if _, err := netip.ParseAddr(addr); err == nil {
		if wildcard {
			return fmt.Errorf("a wildcard over an address; list the address alone")
		}
		return nil
	} else if addr != name {
		return fmt.Errorf("not an IPv6 address in brackets")
	}
	if _, port, err := net.SplitHostPort(name); err == nil {
		return fmt.Errorf("port %s: list the host alone, every port is accepted", port)
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return fmt.Errorf("want a host name (1-253 characters), an IP address, *.domain or *")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			return fmt.Errorf("want a host name (labels of letters, digits, - and _), an IP address, *.domain or *")
		}
	}
	if wildcard && !strings.Contains(name, ".") {
		return fmt.Errorf("a wildcard over the top-level domain %q; name a domain under it", name)
	}
	return nil
}

// markIssuing marks a route that issues IDs or numbers: its answers are
// never cached, and a cross-site browser request for it is refused.
func (s *Server) markIssuing(r *echo.Route) { s.issuing[r.Path] = true }

// noStore marks every answer of an issuing route, errors too, as never to
// be stored: a cache handing one answer to two callers would hand out one
// ID twice. It reports whether the route issues.
func (s *Server) noStore(c echo.Context) bool {
	if !s.issuing[c.Path()] {
		return false
	}
	c.Response().Header()[echo.HeaderCacheControl] = noStoreVal
	return true
}

// screen is the Host check, and the cross-site check of an issuing route.
func (s *Server) screen(c echo.Context, issuing bool) error {
	r := c.Request()
	if path := c.Path(); path != "/healthz" && path != "/readyz" { // probes may send any Host (a pod's IP, a node's name)
		if p := s.hosts.Load(); !p.allowsHeader(r.Host) {
			return misdirected(r.Host, p)
		}
	}
	if issuing && s.cfg.Token == "" {
		if why := crossSite(r); why != "" {
			return &apiError{status: http.StatusForbidden, code: codePermissionDenied,
				message: "cross-site request refused (" + why + "): the issuing routes answer browsers only for this server's own pages; " +
					"a page of this origin may send header " + ClientHeader + ", others need rest.token"}
		}
	}
	return nil
}

// crossSite says why r, a request for an issuing route, may come from a
// page of another site, or "" when it does not.
func crossSite(r *http.Request) string {
	h := r.Header
	site := first(h, "Sec-Fetch-Site")
	switch site {
	case "", "same-origin", "none": // none: typed, bookmarked; no page sent it
	default:
		return "Sec-Fetch-Site: " + clip(site)
	}
	if o, ok := h["Origin"]; ok && (len(o) != 1 || !sameOrigin(o[0], r.Host)) {
		return "Origin: " + clip(strings.Join(o, ", "))
	}
	if site == "" && first(h, ClientHeader) == "" && strings.HasPrefix(first(h, "User-Agent"), "Mozilla/") {
		return "a browser's request without Sec-Fetch-Site or " + ClientHeader
	}
	return ""
}

// first is h.Get(key) for a key in its canonical form, without
// canonicalizing it again on every request (net/http stores headers under
// their canonical keys).
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// sameOrigin reports whether origin (an Origin header) is the server's
// own as the request names it: the same host and port as Host, the port
// defaulting to the Origin scheme's (a TLS-terminating proxy in front
// forwards https://name and Host name). "null" is never.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	defPort := "80"
	if u.Scheme == "https" {
		defPort = "443"
	}
	split := func(hp string) (string, string) {
		if h, p, err := net.SplitHostPort(hp); err == nil {
			return canonicalHost(h), p
		}
		return canonicalHost(hp), defPort
	}
	oh, op := split(u.Host)
	hh, hp := split(host)
	return oh != "" && oh == hh && op == hp
}
