// Package loopback says whether a host name can only mean this machine. The
// API's tokenless mode, the CLI's token file, and the SMTP and
// configuration checks all draw the same line. It imports only the standard
// library.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host is localhost or a loopback IP. It takes a bare
// host, a bracketed IPv6 literal, or either with a port.
func Host(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
