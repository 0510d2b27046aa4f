# State addresses from before the shared module (issue 14's first layout): applying this
# version to an existing deployment moves its resources instead of replacing them (a
# replaced job would drain, replaced topics and subscriptions would lose messages).
moved {
  from = google_project_service.this
  to   = module.deployment.google_project_service.this
}

moved {
  from = module.runtime
  to   = module.deployment.module.runtime
}

moved {
  from = module.job
  to   = module.deployment.module.job
}
