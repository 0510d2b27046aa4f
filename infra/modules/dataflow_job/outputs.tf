output "job_id" {
  description = "Dataflow job id (gcloud dataflow jobs describe/drain JOB_ID)."
  value       = google_dataflow_flex_template_job.this.job_id
}

output "job_name" {
  description = "Dataflow job name."
  value       = google_dataflow_flex_template_job.this.name
}
