// A job class the fixture's JobDetails name, with the two annotations that
// Quartz records per JobDetail: IS_NONCONCURRENT and IS_UPDATE_DATA. The
// generator never runs it (the scheduler is not started).
package com.acme;

import org.quartz.DisallowConcurrentExecution;
import org.quartz.Job;
import org.quartz.JobExecutionContext;
import org.quartz.PersistJobDataAfterExecution;

@DisallowConcurrentExecution
@PersistJobDataAfterExecution
public class ExclusiveJob implements Job {
    public void execute(JobExecutionContext ctx) {}
}
