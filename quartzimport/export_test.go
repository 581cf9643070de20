package quartzimport

// HostileJobData is for the import tests (package quartzimport_test).
var HostileJobData = hostileJobData
