package validate

// AdvancedCronJobPath is where the API server sends AdvancedCronJobs (both versions, as v1beta1).
const AdvancedCronJobPath = "/validate-apps-kruise-io-advancedcronjob"
