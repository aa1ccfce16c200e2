// Package credentials finds registry credentials for an image the way the
// kubelet does: first the pull secrets given for the pull
// (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg), then exec
// credential-provider plugins configured with a kubelet CredentialProviderConfig
// file (kubelet.config.k8s.io/v1), and, when nothing matches, none
// (anonymous). Credentials never appear in logs, errors or Events.
//
// Use:
//
//	plugins, err := credentials.LoadPlugins(configPath, binDir) // optional; nil = secrets only
//	resolver := credentials.NewResolver(plugins)
//	creds, problems := resolver.Lookup(ctx, "123.dkr.ecr.us-east-1.amazonaws.com/app:v1", secrets)
//	// try creds in order, then anonymously; report problems (safe to show)
//
// Images are normalised first (no registry host means docker.io, a single
// name there is under library/, index.docker.io is docker.io; tag and
// digest are dropped): "nginx:1.27" is looked up as
// "docker.io/library/nginx", which is also the image plugins receive.
//
// Registry keys of pull secrets, matchImages of plugins and auth keys of
// plugin responses all match images by the kubelet's rule (see MatchImage):
// same number of host labels, each matched as a glob; equal ports; the
// key's path a string prefix of the image's path. More specific (longer)
// keys come first. Host names are compared case-insensitively.
//
// Plugins speak credentialprovider.kubelet.k8s.io/v1 only. Their answers are
// cached per the response's cacheKeyType (Image, Registry, Global) for its
// cacheDuration (absent: the provider's defaultCacheDuration; 0: not
// cached), and concurrent lookups of one image share one plugin run.
// Providers with tokenAttributes need a pod's service-account token, which
// a pre-pull does not have: they are skipped and reported as a problem.
package credentials
