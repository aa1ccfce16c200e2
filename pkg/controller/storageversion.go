package controller

import "github.com/nodekruise/kruise/pkg/controller/storageversion"

// buildStorageVersion adapts Deps to the storage version migration; without the clients (tests)
// it idles.
func buildStorageVersion(d Deps) (Controller, error) {
	if d.CRDClient == nil || d.MigrationClient == nil {
		return idle{name: storageversion.Name, why: "no apiextensions or metadata client"}, nil
	}
	return storageversion.New(storageversion.Config{
		CRDs:    d.CRDClient.ApiextensionsV1().CustomResourceDefinitions(),
		Objects: d.MigrationClient,
	})
}
