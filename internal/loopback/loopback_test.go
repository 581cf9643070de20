package loopback

import "testing"

func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "localhost:8080": true,
		"127.0.0.1": true, "127.0.0.2:25": true, "::1": true, "[::1]": true, "[::1]:8080": true,
		"": false, "example.com": false, "localhost.example.com": false, "10.0.0.1": false,
		"0.0.0.0": false, "[::]": false, "rebind.evil.example:8080": false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}
