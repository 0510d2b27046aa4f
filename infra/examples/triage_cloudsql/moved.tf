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

moved {
  from = google_secret_manager_secret.longterm
  to   = module.deployment.google_secret_manager_secret.longterm[0]
}

moved {
  from = google_secret_manager_secret_version.longterm
  to   = module.deployment.google_secret_manager_secret_version.longterm[0]
}

moved {
  from = google_secret_manager_secret_iam_member.longterm_accessor
  to   = module.deployment.google_secret_manager_secret_iam_member.longterm_accessor[0]
}
