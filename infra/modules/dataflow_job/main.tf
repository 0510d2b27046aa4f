# The streaming job, launched from a Flex Template that `make deploy` built. The resource is
# only in the google-beta provider. `on_delete = "drain"`: terraform destroy (or replacing
# the job) lets in-flight elements finish and timers fire instead of dropping them.
# Workers and the launcher get private IPs only, in the given subnetwork (which needs
# Private Google Access, and Cloud NAT for anything outside Google's APIs).
resource "google_dataflow_flex_template_job" "this" {
  provider = google-beta

  project                 = var.project_id
  region                  = var.region
  name                    = var.name
  container_spec_gcs_path = var.template_path
  sdk_container_image     = var.image
  parameters              = var.parameters
  service_account_email   = var.service_account_email
  temp_location           = var.temp_location
  staging_location        = var.staging_location
  subnetwork              = var.subnetwork
  ip_configuration        = "WORKER_IP_PRIVATE"
  kms_key_name            = var.kms_key_name
  machine_type            = var.machine_type
  max_workers             = var.max_workers
  enable_streaming_engine = true
  on_delete               = "drain"
  transform_name_mapping  = var.transform_name_mapping
  labels                  = var.labels
}
