package apiservertest

import (
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func withCodec(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}
