// A job class the fixture's JobDetails name: Quartz stores only the class
// name, and the generator never runs it (the scheduler is not started).
package com.acme;

import org.quartz.Job;
import org.quartz.JobExecutionContext;

public class CleanupJob implements Job {
    public void execute(JobExecutionContext ctx) {}
}
