# The {{ cookiecutter.longterm_backend }} store URI carries a password, so it is neither a job
# parameter (anyone who can view the job reads those) nor in the job's graph (staged in a
# bucket): the store module writes it to its own secret, write-only (it never enters
# Terraform state), and the job gets `secretmanager://` plus the version's name
# (output longterm_memory). Only the worker service account may read the secret, when a
# worker opens the store.
resource "google_secret_manager_secret_iam_member" "longterm_accessor" {
  project   = var.project_id
  secret_id = module.memory.longterm_secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${module.runtime.service_account_email}"
}
